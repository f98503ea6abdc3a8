#pragma once
// Text the command line prints about what the user gave it: bytes from files and arguments made
// safe for a terminal, and the "did you mean" of a mistyped option.
#include <string>
#include <vector>

namespace hipstudio::app {

// `text` with every byte that is not printable UTF-8 written as \xHH: control bytes (tab, ESC, CR,
// DEL: nothing from a file can drive the terminal) and bytes outside a valid UTF-8 sequence (a raw
// 0xFF from a damaged file). Newlines stay: a few messages list choices one a line. Backslashes stay.
std::string escape_for_terminal(const std::string& text);

// The candidate closest to `typed` by edit distance when it is close enough to be a typo (at most
// 2 edits, or a third of the name); "" otherwise.
std::string closest_name(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace hipstudio::app
