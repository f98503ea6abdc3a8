#pragma once
// The default prompt for stories15M (assets/prompts/default.txt, compiled in: one source for the
// GUI's opening prompt and the README's command-line examples). About 190 tokens: HiP has something
// to prune and the 256-token context still has room for decoding.
namespace hipstudio::app {

extern const char* const kDefaultPrompt;

}  // namespace hipstudio::app
