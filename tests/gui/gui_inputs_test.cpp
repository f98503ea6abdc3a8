// The GUI's answers to inputs it refuses or results it cannot refresh, without a window: the mask
// view's refit on a new T, the debounced settings writer, the refusals' wording (no command-line
// flags) and why a stale view is stale when nothing runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app/gui/app_state.h"
#include "app/gui/files.h"
#include "app/gui/gui_messages.h"
#include "app/gui/settings_saver.h"

namespace hipstudio::gui {
namespace {

TEST(GuiInputs, MaskViewRefitsANewTUnlessAZoomStillFits) {
  MaskViewState v;
  v.follow_tokens(64);
  v.span = 64;  // what the canvas draws for a fitted view
  v.follow_tokens(195);
  EXPECT_EQ(v.span, 0);  // fitted to the longer prompt, not cut to 0..64
  EXPECT_EQ(v.tokens, 195);
  // Zoomed into 100..132 of 195: a longer prompt keeps the range, a shorter one that cuts it refits.
  v.span = 32, v.x0 = 100, v.y0 = 100, v.zoomed = true;
  v.follow_tokens(300);
  EXPECT_EQ(v.span, 32);
  EXPECT_EQ(v.x0, 100);
  v.follow_tokens(120);
  EXPECT_EQ(v.span, 0);
  EXPECT_FALSE(v.zoomed);
  // The same T again changes nothing, a fit forgets the zoom.
  v.span = 16, v.zoomed = true;
  v.follow_tokens(120);
  EXPECT_EQ(v.span, 16);
  v.fit();
  EXPECT_FALSE(v.zoomed);
}

TEST(GuiInputs, SettingsAreWrittenASecondAfterTheLastChange) {
  SettingsSaver saver(1.0, 0.25);
  saver.set_written("a");
  EXPECT_FALSE(saver.update("a", 0.0));  // unchanged: nothing to write
  EXPECT_FALSE(saver.due(0.1));
  EXPECT_TRUE(saver.due(0.3));
  EXPECT_FALSE(saver.update("b", 1.0));  // changed: wait for quiet
  EXPECT_FALSE(saver.update("c", 1.5));  // still changing (a drag)
  EXPECT_FALSE(saver.update("c", 2.4));
  EXPECT_TRUE(saver.update("c", 2.6));   // a second after the last change
  EXPECT_FALSE(saver.update("c", 5.0));  // written once
}

TEST(GuiInputs, RefusalsSpeakTheGuisWords) {
  for (const std::string& m : {empty_prompt_message(), single_token_message(), prompt_too_long_message(10365, 256, 16, "stories15M"),
                               generate_too_long_message(200, 100, 256), generate_too_long_message(300, 1, 256),
                               model_not_found_message("/x/model.bin"), prompt_is_folder_message("/tmp")})
    EXPECT_EQ(m.find("--"), std::string::npos) << m;
  const std::string too_long = prompt_too_long_message(10365, 256, 16, "stories15M");
  EXPECT_NE(too_long.find("10,365 tokens"), std::string::npos) << too_long;
  EXPECT_NE(too_long.find("at most 240 prompt tokens"), std::string::npos) << too_long;
  EXPECT_NE(generate_too_long_message(200, 100, 256).find("'new tokens' to 56 or fewer"), std::string::npos);
  // The engine's own messages lose their flags.
  for (const std::string& engine :
       {std::string("the prompt is empty: pass some text with --prompt TEXT or --prompt @FILE"),
        std::string("the prompt has 300 tokens and 16 more are asked for (316 in all), but the context is 256 tokens (the model's "
                    "max_seq_len): shorten the prompt, lower --max-tokens, or raise --context (quality past the trained context is "
                    "not guaranteed)"),
        std::string("model path 'x' does not exist (pass a llama2.c .bin file or a Hugging Face directory)"),
        std::string("m: no tokenizer.json in the model directory; copy it there or pass --tokenizer PATH")})
    EXPECT_EQ(in_gui_words(engine).find("--"), std::string::npos) << in_gui_words(engine);
  EXPECT_EQ(in_gui_words("out of memory"), "out of memory");
}

TEST(GuiInputs, AnIdleStaleViewSaysWhyNotUpdating) {
  AppState s;
  Snapshot snap;
  EXPECT_EQ(stale_reason(s, snap, kStageMasks), "");
  snap.stale[kStageMasks] = true;
  snap.busy = true;
  EXPECT_EQ(stale_reason(s, snap, kStageMasks), "(updating)");
  snap.busy = false;
  snap.error[kStageAnalysis] = empty_prompt_message();
  std::string why = stale_reason(s, snap, kStageMasks);
  EXPECT_NE(why, "(updating)");
  EXPECT_NE(why.find("prompt"), std::string::npos) << why;
  snap.error[kStageAnalysis].clear();
  snap.error[kStageModel] = model_not_found_message("/x");
  EXPECT_NE(stale_reason(s, snap, kStageMasks).find("model did not load"), std::string::npos);
  snap.error[kStageModel] = "cancelled";
  EXPECT_NE(stale_reason(s, snap, kStageMasks).find("Cancelled"), std::string::npos);
  s.invalid = "k must be a multiple of b_k";
  EXPECT_NE(stale_reason(s, snap, kStageMasks).find("refused: k must"), std::string::npos);
}

TEST(GuiInputs, APromptFileThatIsAFolderOrMissingIsNamedSo) {
  AppState s;
  s.prompt = "kept";
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_FALSE(open_prompt_file(s, dir));
  EXPECT_NE(s.status_message.find("is a folder"), std::string::npos) << s.status_message;
  EXPECT_FALSE(open_prompt_file(s, dir + "/hipstudio-no-such-prompt.txt"));
  EXPECT_NE(s.status_message.find("no such file"), std::string::npos) << s.status_message;
  EXPECT_EQ(s.prompt, "kept");  // neither replaced the prompt with an empty one
  EXPECT_TRUE(s.recent_prompts.empty());
}

}  // namespace
}  // namespace hipstudio::gui
