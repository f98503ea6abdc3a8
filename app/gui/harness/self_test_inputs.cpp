// The self-test's steps for inputs the GUI must survive and refuse in its own words: the longest
// prompt the fuzzer can make and a 100 KB prompt (refused, never aborting on ImGui's 16-bit vertex
// indices, while every panel draws), an empty prompt and a model path that names nothing (no view
// says "(updating)" while nothing runs), the mask view refitting a longer prompt, Generate past the
// context refused in its panel, the 1024 px
// export preview inside a 1000 px-high window, and a reopened capture's prompt text.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include <unistd.h>

#include <imgui.h>
#include <imgui_internal.h>  // the preview window's rectangle (the harness reads ImGui's window list)

#include "app/gui/capture_view.h"
#include "app/gui/files.h"
#include "app/gui/gui_messages.h"
#include "app/gui/harness/self_test.h"
#include "app/gui/save_export.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

const char* const kMore = kSelfTestMore;

// libFuzzer's longest input here: without -max_len it takes the longest seed of the corpus
// (tests/fuzz/corpus/capture/stories15M_mask_iterations.hipcap, 57,520 bytes). As a prompt: every
// byte value (NUL, stray UTF-8 continuation bytes, control characters), no newline for thousands
// of bytes at a time, the worst case for a text renderer.
constexpr size_t kFuzzerMaxLen = 57520;

std::string fuzzer_prompt() {
  std::mt19937 rng(608799614);
  std::string p(kFuzzerMaxLen, '\0');
  for (char& c : p) c = static_cast<char>(rng() & 0xFF);
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] == '\n' && i % 8192 != 0) p[i] = 'x';  // a newline every 8 KB at most
  return p;
}

// 100 KB of story text (words, spaces, newlines): what a user pastes.
std::string story_prompt(const std::string& story) {
  std::string p;
  while (p.size() < 100 * 1024) p += story + "\n";
  return p.substr(0, 100 * 1024);
}

std::string fmt_fail_ll(const char* format, long long a, long long b = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

bool has_flag_advice(const std::string& m) { return m.find("--") != std::string::npos; }

}  // namespace

void SelfTest::build_input_steps() {
  auto story = std::make_shared<std::string>();  // the default prompt, restored after each refusal
  const std::vector<std::string> cycle{"tokens", "generate", "mask", "compare", "heads", "stepper", "locality", "kvcache", "latency"};
  auto long_prompt_step = [this, story, cycle](const std::string& name, std::function<std::string(const std::string&)> make) {
    auto frame = std::make_shared<int>(0);
    return SelfTestStep{
        name,
        [this, story, make, frame](AppState& s) {
          if (story->empty()) *story = s.prompt;
          s.prompt = make(*story);
          *frame = 0;
          max_vertices_ = 0;
        },
        [](const AppState& s, const Snapshot& snap) {
          return !snap.busy && !snap.error[kStageAnalysis].empty() && snap.analysis && snap.analysis->prompt != s.prompt;
        },
        [this, cycle, frame](AppState& s, const Snapshot& snap) -> std::string {
          // Every panel drawn with the long prompt in the sidebar (and in Generate): a frame each.
          if (*frame < static_cast<int>(cycle.size())) {
            s.focus_panel = cycle[static_cast<size_t>((*frame)++)];
            if (*frame == 2 && !screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "long-prompt");
            return kMore;
          }
          const std::string& err = snap.error[kStageAnalysis];
          std::printf("self-test:   %zu bytes refused: %s\n", s.prompt.size(), err.c_str());
          std::printf("self-test:   largest draw list %lld vertices (16-bit indices: 65,536)\n", static_cast<long long>(max_vertices_));
          if (err.find("The prompt has") != 0 || err.find("context") == std::string::npos) return "not the GUI's refusal: " + err;
          if (has_flag_advice(err)) return "the refusal gives command-line advice: " + err;
          if (max_vertices_ >= 32768) return fmt_fail_ll("a draw list holds %lld vertices: more than half of 16-bit indices", max_vertices_);
          const std::string why = stale_reason(s, snap, kStageMasks);
          if (why == "(updating)" || why.empty()) return "the idle mask view says '" + why + "' after a refused prompt";
          return "";
        },
        120, 2};
  };
  steps_.push_back(long_prompt_step("the fuzzer's longest prompt (57,520 random bytes) is refused, every panel drawn", [](const std::string&) {
    return fuzzer_prompt();
  }));
  steps_.push_back(long_prompt_step("a 100 KB prompt is refused, every panel drawn", story_prompt));

  // An empty prompt, then a model path that names nothing: refused in the GUI's words, and the
  // views (the last result, greyed) say why instead of "(updating)".
  steps_.push_back({"an empty prompt is refused in the GUI's words",
                    [](AppState& s) { s.prompt.clear(); },
                    [](const AppState&, const Snapshot& snap) { return !snap.busy && !snap.error[kStageAnalysis].empty(); },
                    [](AppState& s, const Snapshot& snap) -> std::string {
                      const std::string& err = snap.error[kStageAnalysis];
                      if (err != empty_prompt_message()) return "unexpected message: " + err;
                      const std::string why = stale_reason(s, snap, kStageMasks);
                      if (why == "(updating)" || why.empty()) return "the idle mask view says '" + why + "'";
                      return "";
                    },
                    60, 2});
  steps_.push_back({"a model path that names nothing is refused in the GUI's words",
                    [story](AppState& s) {
                      s.prompt = *story;
                      s.model_path = "/nonexistent/hipstudio-model.bin";
                    },
                    [](const AppState&, const Snapshot& snap) { return !snap.busy && !snap.error[kStageModel].empty(); },
                    [this](AppState& s, const Snapshot& snap) -> std::string {
                      const std::string& err = snap.error[kStageModel];
                      if (err != model_not_found_message(s.model_path)) return "unexpected message: " + err;
                      const std::string why = stale_reason(s, snap, kStageMasks);
                      if (why == "(updating)" || why.empty()) return "the idle mask view says '" + why + "'";
                      if (std::find(s.recent_models.begin(), s.recent_models.end(), s.model_path) != s.recent_models.end())
                        return "Recent models lists a path that did not load";
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "bad-model");
                      return "";
                    },
                    60, 3});

  // A shorter prompt, fitted, then the default one: the mask view's axes follow the new T.
  auto short_t = std::make_shared<int64_t>(0);
  steps_.push_back({"a shorter prompt's mask view",
                    [story](AppState& s) {
                      s.model_path.clear();
                      s.prompt = story->substr(0, story->size() / 3);
                      s.mask_view.fit();
                      s.focus_panel = "mask";
                    },
                    [](const AppState& s, const Snapshot& snap) {
                      return !snap.busy && snap.masks && snap.fresh(kStageMasks) && snap.analysis && snap.analysis->prompt == s.prompt;
                    },
                    [short_t](AppState& s, const Snapshot& snap) -> std::string {
                      *short_t = snap.masks->source->tokens();
                      if (s.mask_view.tokens != *short_t) return kMore;  // drawn once with the new T
                      return "";
                    },
                    240, 3});
  steps_.push_back({"a longer prompt refits the mask view",
                    [story](AppState& s) { s.prompt = *story; },
                    [](const AppState& s, const Snapshot& snap) {
                      return !snap.busy && snap.masks && snap.fresh(kStageMasks) && snap.analysis && snap.analysis->prompt == s.prompt;
                    },
                    [this, short_t](AppState& s, const Snapshot& snap) -> std::string {
                      const int64_t T = snap.masks->source->tokens();
                      if (s.mask_view.tokens != T) return kMore;
                      std::printf("self-test:   T %lld -> %lld, view span %.0f\n", static_cast<long long>(*short_t), static_cast<long long>(T),
                                  s.mask_view.span);
                      if (!(T > *short_t)) return "the longer prompt is not longer";
                      if (s.mask_view.span != static_cast<double>(T) || s.mask_view.x0 != 0 || s.mask_view.y0 != 0)
                        return fmt_fail_ll("the view spans %lld cells of a %lld-token prompt", static_cast<int64_t>(s.mask_view.span), T);
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "refit");
                      return "";
                    },
                    240, 3});

  // Generate past the context: the refusal, in the GUI's words, in the Generate panel itself.
  steps_.push_back({"Generate past the context says so in its panel",
                    [](AppState& s) {
                      s.generate_tokens = 256;
                      ++s.generate_id;
                      s.focus_panel = "generate";
                    },
                    [](const AppState&, const Snapshot& snap) { return !snap.busy && !snap.error[kStageGenerate].empty(); },
                    [this](AppState& s, const Snapshot& snap) -> std::string {
                      const std::string& err = snap.error[kStageGenerate];
                      std::printf("self-test:   %s\n", err.c_str());
                      if (err.find("The prompt has") != 0 || err.find("'new tokens'") == std::string::npos) return "not the GUI's refusal: " + err;
                      if (has_flag_advice(err)) return "the refusal gives command-line advice: " + err;
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "generate-past-context");
                      s.generate_tokens = 12;
                      return "";
                    },
                    120, 3});

  // The export preview of a 1024 px figure in this 1000 px-high window: inside the viewport.
  auto dir = std::make_shared<std::string>((std::filesystem::temp_directory_path() / ("hipstudio-selftest-inputs-" + std::to_string(::getpid()))).string());
  steps_.push_back({"File > Export view at 1024 px: the preview window inside the viewport",
                    [dir](AppState& s) {
                      s.preview_path.clear();
                      s.last_exported.clear();
                    },
                    [](const AppState&, const Snapshot& snap) { return !snap.busy && snap.masks && snap.fresh(kStageMasks); },
                    [this, dir, n = std::make_shared<int>(0)](AppState& s, const Snapshot& snap) -> std::string {
                      if (*n == 0) {
                        ExportOptions o;
                        o.dir = *dir;
                        o.px = 1024;
                        if (!start_export_view(s, snap, o)) return "export refused: " + s.status_message;
                        ++*n;
                        return kMore;
                      }
                      if (s.file_task) return kMore;
                      if (s.preview_path.empty()) return "the export opened no preview: " + s.status_message;
                      if ((*n)++ < 4) return kMore;  // the window appears and settles
                      const ImGuiWindow* w = ImGui::FindWindowByName("Exported figure");
                      if (!w || !w->WasActive) return "no preview window";
                      const float out = outside_viewport(w->Pos, ImVec2(w->Pos.x + w->Size.x, w->Pos.y + w->Size.y));
                      const ImVec2 vs = ImGui::GetMainViewport()->WorkSize;
                      std::printf("self-test:   preview window %.0f x %.0f at (%.0f, %.0f) in a %.0f x %.0f viewport\n", w->Size.x, w->Size.y,
                                  w->Pos.x, w->Pos.y, vs.x, vs.y);
                      if (out > 0.5f) return fmt_fail_ll("the preview window is %lld px outside the viewport", static_cast<int64_t>(out));
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "preview-1024");
                      return "";
                    },
                    120, 2});
  // A capture of the live run, reopened: its prompt is the live one's text (the sidebar shows it,
  // as the manifest holds it), and its tokens show the live run's text pieces, not "#id".
  steps_.push_back({"a reopened capture shows the tokens' text",
                    [](AppState& s) { s.preview_path.clear(); },
                    [](const AppState& s, const Snapshot& snap) { return !s.file_task && !snap.busy; },
                    [this, dir, n = std::make_shared<int>(0), live = std::make_shared<std::vector<std::string>>()](
                        AppState& s, const Snapshot& snap) -> std::string {
                      const std::string path = *dir + "/text.hipcap";
                      if (*n == 0) {
                        if (!snap.analysis) return "no live run to capture";
                        *live = snap.analysis->prompt_tokens;
                        if (!start_save_capture(s, snap, {"mask"}, path)) return "save refused: " + s.status_message;
                        ++*n;
                        return kMore;
                      }
                      if (s.file_task) return kMore;
                      if (*n == 1) {
                        if (!saved_ok(s, path)) return "the save failed: " + s.status_message;
                        if (!open_capture_file(s, path)) return "the capture does not reopen: " + s.status_message;
                        s.focus_panel = "tokens";
                        ++*n;
                        return kMore;
                      }
                      if ((*n)++ < 5) return kMore;
                      const AnalysisView& a = *s.capture->analysis;
                      if (a.prompt != s.prompt) return "the capture's prompt text is not the live prompt";
                      if (!s.capture->has_pieces) return "the capture holds no token text";
                      if (a.prompt_tokens != *live) return "the capture's token text differs from the live run's";
                      for (const std::string& t : a.prompt_tokens)
                        if (t.rfind('#', 0) == 0 && t.size() > 1 && std::isdigit(static_cast<unsigned char>(t[1])))
                          return "the capture shows token ids (" + t + ")";
                      std::printf("self-test:   reopened capture: prompt text %zu bytes, %zu token pieces, last '%s'\n", a.prompt.size(),
                                  a.prompt_tokens.size(), a.prompt_tokens.empty() ? "" : a.prompt_tokens.back().c_str());
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "capture-text");
                      return "";
                    },
                    240, 2});
  steps_.push_back({"close the capture",
                    [dir](AppState& s) {
                      close_capture(s);
                      std::filesystem::remove_all(*dir);
                    },
                    [](const AppState&, const Snapshot& snap) { return !snap.busy && snap.fresh(kStageMasks); },
                    [](AppState&, const Snapshot&) -> std::string { return ""; },
                    240, 2});
}

void SelfTest::record_draw_data(const ImDrawData* data) {
  if (!data) return;
  for (int i = 0; i < data->CmdListsCount; ++i)
    max_vertices_ = std::max<int64_t>(max_vertices_, data->CmdLists[i]->VtxBuffer.Size);
}

}  // namespace hipstudio::gui
