#include "app/gui/harness/self_test.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include <unistd.h>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include "app/gui/capture_view.h"
#include "app/gui/files.h"
#include "app/gui/save_export.h"
#include "captures/capture.h"
#include "kernels/mask_reference.h"
#include "kernels/search_range.h"

namespace hipstudio::gui {

namespace {

const char* const kMore = kSelfTestMore;  // check wants another frame

std::string fail(const char* format, long long a = 0, long long b = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}


// Between frames (no current window): whether any popup or modal is open.
bool any_popup_open() { return ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel); }

}  // namespace

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::floor(p * static_cast<double>(v.size() - 1) + 0.5)));
  return v[i];
}

SelfTestStep SelfTest::open_panel_step(Panel* panel, const std::string& name, double timeout_s,
                                       std::function<void(const std::string& shot)> on_shot) {
  return {name,
          [this, panel](AppState& s) {
            panel->open = true;
            s.focus_panel = panel->id();
            drawn_.clear();
          },
          [](const AppState&, const Snapshot&) { return true; },
          [this, panel, on_shot](AppState&, const Snapshot&) -> std::string {
            if (!drawn_.count(panel->id())) return "the panel did not draw";
            if (screenshot_.empty()) return "";
            pending_screenshot_ = with_suffix(screenshot_, panel->id());
            if (on_shot) on_shot(pending_screenshot_);
            return "";
          },
          timeout_s, 3};
}

std::string with_suffix(const std::string& path, const std::string& suffix) {
  const size_t dot = path.rfind(".png");
  return (dot == std::string::npos ? path : path.substr(0, dot)) + "-" + suffix + ".png";
}

bool saved_ok(const AppState& s, const std::string& path) {
  return !s.file_task && s.status_message.rfind("saved capture " + path + " (", 0) == 0;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool is_png_bytes(const std::string& bytes) { return bytes.size() > 8 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0; }

// A small XML well-formedness check: tags nest and close, the root element is <svg>.
bool is_svg_text(const std::string& x) {
  std::vector<std::string> open;
  std::string root;
  size_t i = 0;
  while ((i = x.find('<', i)) != std::string::npos) {
    if (x.compare(i, 4, "<!--") == 0) {
      i = x.find("-->", i);
      if (i == std::string::npos) return false;
      continue;
    }
    const size_t end = x.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = x.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    const bool closing = tag[0] == '/';
    const bool self_closing = tag.back() == '/';
    const size_t name_end = tag.find_first_of(" \t\r\n/", closing ? 1 : 0);
    const std::string name = tag.substr(closing ? 1 : 0, name_end == std::string::npos ? std::string::npos : name_end - (closing ? 1 : 0));
    if (closing) {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
      continue;
    }
    if (root.empty()) root = name;
    else if (open.empty()) return false;  // a second root element
    if (!self_closing) open.push_back(name);
  }
  return root == "svg" && open.empty();
}

SelfTest::SelfTest(std::vector<std::unique_ptr<Panel>>& panels, const std::string& screenshot, int frames,
                   bool frame_stats, const Worker& worker, const SoakLimit& soak, const ScaleOptions& scale)
    : panels_(panels), screenshot_(screenshot), frames_(frames), frame_stats_(frame_stats) {
  if (scale.enabled) {
    build_scale_steps(scale);
    return;
  }
  if (soak.loops > 0 || soak.seconds > 0) {
    soak_ = std::make_unique<Soak>(soak, worker, panels);
    steps_ = soak_->setup_steps();
    loop_start_ = steps_.size();
    for (auto& step : soak_->loop_steps()) steps_.push_back(std::move(step));
    return;
  }
  // Developer shortcut for tuning frame times: HIPSTUDIO_SELF_TEST_FRAMES_ONLY=1 skips the
  // functional script (ctest always runs it).
  const char* only_frames = std::getenv("HIPSTUDIO_SELF_TEST_FRAMES_ONLY");
  if (!(only_frames && *only_frames == '1' && frames_ > 0)) {
    build_steps();
    build_view_steps();
    build_panel_steps();
    build_capture_steps();
    build_input_steps();
    build_compare_steps();
  }
  if (frames_ > 0) build_frame_steps();
}

void SelfTest::build_steps() {
  // 1. The default model and prompt open and the paired run completes.
  steps_.push_back({"open the default model and prompt", [](AppState&) {},
                    [](const AppState&, const Snapshot& s) {
                      if (!s.error[kStageModel].empty() || !s.error[kStageAnalysis].empty()) return true;  // fail fast
                      return s.analysis && s.masks && s.fresh(kStageAnalysis) && s.fresh(kStageMasks) && !s.busy;
                    },
                    [](AppState&, const Snapshot& s) -> std::string {
                      if (!s.error[kStageModel].empty()) return "the model did not load: " + s.error[kStageModel];
                      if (!s.error[kStageAnalysis].empty()) return "the analysis failed: " + s.error[kStageAnalysis];
                      if (!s.model || s.model->synthetic) return "no model loaded";
                      if (s.analysis->tokens() < 32) return fail("prompt has only %lld tokens", s.analysis->tokens());
                      if (static_cast<int64_t>(s.analysis->analysis->inputs.size()) != s.model->n_layers)
                        return "analysis inputs do not cover every layer";
                      if (s.analysis->analysis->options.hip.hip.k != 32) return "default k is not 32";
                      return "";
                    },
                    240, 2, true});
  // 2. The mask view shows exactly the engine's masks for the selected layer.
  steps_.push_back({"mask view = engine masks",
                    [](AppState& s) { s.focus_panel = "mask"; },
                    [](const AppState&, const Snapshot& s) { return s.masks != nullptr; },
                    [](AppState&, const Snapshot& s) -> std::string {
                      const LayerMaskSnapshot& m = *s.masks;
                      const hip::MaskResult engine = hip::estimate_masks_reference(m.source->inputs(m.layer), m.params).mask;
                      if (engine.blocks != m.hip.blocks || engine.counts != m.hip.counts) return "mask blocks differ";
                      return "";
                    }});
  // 2b. The mouse: the wheel zooms the mask view, a click picks the query block under it.
  auto phase = std::make_shared<int>(0);
  steps_.push_back({"zoom and click in the mask view",
                    [this, phase](AppState& s) {
                      *phase = 0;
                      s.query_block = 0;
                      mouse_x = 0.40f;
                      mouse_y = 0.55f;
                    },
                    [](const AppState&, const Snapshot& s) { return s.masks != nullptr; },
                    [this, phase](AppState& s, const Snapshot& snap) -> std::string {
                      const double T = static_cast<double>(snap.masks->source->tokens());
                      switch ((*phase)++) {
                        case 0: wheel = 2.0f; return kMore;     // scroll in
                        case 1: return kMore;                   // let the view settle
                        case 2:
                          if (!(s.mask_view.span < T)) return "the wheel did not zoom the mask view";
                          s.mask_view.span = 0;                 // back to fit (what F does)
                          return kMore;
                        case 3: mouse_down = true; return kMore;  // press ...
                        case 4: mouse_down = false; return kMore; // ... and release: a click
                        case 5: return kMore;
                        default:
                          mouse_x = 0.01f, mouse_y = 0.99f;
                          if (s.query_block <= 0) return "a click in the mask view did not pick a query block";
                          std::printf("self-test:   click picked query block %d\n", s.query_block);
                          return "";
                      }
                    },
                    30, 2});
  // 3. Changing k re-runs the analysis and the masks with the new budget.
  steps_.push_back({"change k to 16",
                    [](AppState& s) { s.knobs.k = 16; },
                    [](const AppState&, const Snapshot& s) {
                      return s.analysis && s.analysis->analysis->options.hip.hip.k == 16 && s.masks &&
                             s.masks->params.k == 16 && s.fresh(kStageMasks) && !s.busy;
                    },
                    [](AppState& s, const Snapshot& snap) -> std::string {
                      if (!s.invalid.empty()) return "valid knobs reported invalid: " + s.invalid;
                      if (snap.masks->hip.kb != 16 / s.applied.b_k) return fail("Kb is %lld", snap.masks->hip.kb);
                      return "";
                    }});
  // 4. An invalid combination is reported with its rule and never runs.
  steps_.push_back({"invalid b_k is refused",
                    [](AppState& s) { s.knobs.b_k = 3; },
                    [](const AppState& s, const Snapshot&) { return !s.invalid.empty(); },
                    [this](AppState& s, const Snapshot& snap) -> std::string {
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "invalid");
                      if (s.invalid.find("multiple") == std::string::npos) return "unexpected message: " + s.invalid;
                      if (snap.stale[kStageAnalysis]) return "an invalid combination reached the worker";
                      return "";  // b_k is restored by the next step: this frame still shows the rule
                    }});
  // 5. All pruning iterations of one query block; the final mask equals the engine's row.
  auto last_alive = std::make_shared<int64_t>(-1);
  steps_.push_back({"step through every iteration of the last query block",
                    [this, last_alive](AppState& s) {
                      pressed_from_ = -1;
                      s.knobs.b_k = 2;
                      s.query_block = 1 << 20;  // clamped to the last block by the parameters panel
                      s.step = 0;
                      s.focus_panel = "stepper";
                      *last_alive = -1;
                    },
                    [](const AppState& s, const Snapshot& snap) {
                      return snap.trace && snap.fresh(kStageTrace) && snap.trace->query_block == s.query_block &&
                             s.query_block > 0 && !snap.busy;
                    },
                    [this, last_alive](AppState& s, const Snapshot& snap) -> std::string {
                      const TraceView& t = *snap.trace;
                      const int last = static_cast<int>(t.steps.size()) - 1;
                      if (t.trace.iterations.empty()) return "the last query block did not search (N <= Kb)";
                      if (key_down >= 0) {  // the Right arrow was held for a frame: release it
                        key_down = -1;
                        return kMore;
                      }
                      const viz::TraceStep& st = t.steps[static_cast<size_t>(std::min(s.step, last))];
                      if (*last_alive >= 0 && st.alive_blocks > *last_alive) return "alive blocks grew between steps";
                      *last_alive = st.alive_blocks;
                      if (s.step < last) {
                        const int before = s.step;
                        if (*last_alive >= 0 && before != pressed_from_ + 1 && pressed_from_ >= 0)
                          return "the Right arrow did not advance the stepper";
                        pressed_from_ = before;
                        if (before == 2 && !screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "iteration2");
                        key_down = GLFW_KEY_RIGHT;  // press it: the shortcut advances one iteration
                        return kMore;
                      }
                      std::vector<int32_t> starts;
                      for (const auto& n : st.nodes) {
                        if (n.second != n.first + 1) return "a final node holds more than one block";
                        starts.push_back(n.first);
                      }
                      if (starts != t.engine_blocks) return "stepper's final mask differs from the engine's mask";
                      if (starts != t.trace.blocks) return "stepper's final mask differs from the trace's mask";
                      const LayerMaskSnapshot& m = *snap.masks;
                      const int32_t* o = m.oracle.row(t.head, t.query_block);
                      if (std::vector<int32_t>(o, o + m.oracle.count(t.head, t.query_block)) != t.oracle_blocks)
                        return "stepper's oracle blocks differ from the engine's oracle mask";
                      std::printf("self-test:   %d iterations, final recall %.3f\n", last, st.oracle_coverage);
                      return "";
                    },
                    120, 2});
  // 6. Every panel draws.
  for (auto& p : panels_) {
    if (p->slot == PaneSlot::Sidebar) continue;
    steps_.push_back(open_panel_step(p.get(), std::string("open panel '") + p->title() + "'", 30));
  }
  // 7. Decode a few tokens: decode records and the offloading replay cover them.
  auto decoded = std::make_shared<Snapshot>();  // step 7's result, for 7a
  steps_.push_back({"decode 6 tokens (KV cache)",
                    [](AppState& s) {
                      s.knobs.decode_steps = 6;
                      s.focus_panel = "kvcache";
                    },
                    [](const AppState&, const Snapshot& s) {
                      return s.analysis && s.analysis->analysis->decode.size() == 6 && s.offload && s.fresh(kStageOffload) &&
                             !s.busy;
                    },
                    [decoded](AppState&, const Snapshot& s) -> std::string {
                      *decoded = s;
                      const offload::OffloadResult& r = s.offload->result;
                      if (r.steps != 6) return fail("offload replay has %lld steps", r.steps);
                      for (const auto* c : {&r.mask, &r.sparse}) {
                        int64_t sum = 0;
                        for (const auto& st : c->per_step_total) sum += st.accesses;
                        if (sum != c->total.accesses || c->total.hits + c->total.misses != c->total.accesses)
                          return "offload counts do not add up";
                        if (c->total.accesses == 0) return "no KV reads recorded";
                      }
                      return "";
                    }});
  // 7a. An r_m change re-runs the decode half only: the prefill's results and the layer views are the
  // same objects as before, and the new steps refresh the masks every r_m steps.
  steps_.push_back({"an r_m change re-runs only the decode steps",
                    [](AppState& s) { s.knobs.r_m = 2; },
                    [](const AppState&, const Snapshot& s) {
                      return s.analysis && s.analysis->analysis->options.hip.refresh_every == 2 && s.fresh(kStageDecode) &&
                             s.fresh(kStageOffload) && !s.busy;
                    },
                    [decoded](AppState& s, const Snapshot& snap) -> std::string {
                      const PairedAnalysis& pa = *snap.analysis->analysis;
                      if (!decoded->analysis || snap.analysis->prefill_identity() != decoded->analysis->prefill_identity())
                        return "the r_m change re-ran the prefill";
                      if (snap.masks != decoded->masks || snap.dense != decoded->dense) return "the r_m change recomputed the layer views";
                      if (pa.decode.size() != 6) return fail("%lld decode steps after the r_m change, not 6", static_cast<long long>(pa.decode.size()));
                      for (const DecodeStepRecord& d : pa.decode)
                        if (d.refreshed != (d.step % 2 == 0)) return fail("decode step %lld refreshed (%lld) against r_m 2", d.step, d.refreshed ? 1 : 0);
                      std::printf("self-test: r_m change: decode half %.0f ms (the prefill took %.0f ms and did not re-run)\n",
                                  snap.analysis->decode_seconds * 1e3, snap.analysis->prefill_seconds * 1e3);
                      s.knobs.r_m = 4;
                      return "";
                    },
                    60, 1});
  // 7b. Cancel: a longer decode starts, is cancelled, and the last result stays on screen (stale).
  auto cancel_sent = std::make_shared<bool>(false);
  steps_.push_back({"cancel a running analysis",
                    [cancel_sent](AppState& s) {
                      s.knobs.decode_steps = 40;
                      *cancel_sent = false;
                    },
                    [](const AppState&, const Snapshot& s) {
                      return (s.busy && s.running_stage == kStageDecode) || s.error[kStageDecode] == "cancelled";
                    },
                    [cancel_sent](AppState& s, const Snapshot& snap) -> std::string {
                      if (!*cancel_sent) {
                        s.cancel_requested = true;  // what the Cancel button and Esc do
                        *cancel_sent = true;
                        return kMore;
                      }
                      if (snap.error[kStageDecode] != "cancelled" || snap.busy) return kMore;
                      // Only the decode half ran (and was cancelled): more steps never re-run a prefill.
                      if (!snap.fresh(kStageAnalysis) || !snap.fresh(kStageMasks))
                        return "a decode-steps change re-ran the prefill or the layer views";
                      if (!snap.analysis || snap.analysis->analysis->decode.size() != 6 || !snap.stale[kStageDecode])
                        return "the previous result is not kept (greyed) after a cancel";
                      s.knobs.decode_steps = 6;  // back to 6 steps: the decode half runs again, the prefill not
                      return "";
                    },
                    60, 1});
  // 8. Score locality: the histogram holds every key pair of the chosen queries.
  steps_.push_back({"score locality histogram",
                    [](AppState& s) {
                      s.delta = 8;
                      s.focus_panel = "locality";
                    },
                    [](const AppState&, const Snapshot& s) { return s.locality && s.fresh(kStageLocality) && !s.busy; },
                    [](AppState&, const Snapshot& s) -> std::string {
                      const LocalityView& v = *s.locality;
                      const hip::AttentionInputs in = s.analysis->inputs(v.layer);
                      int64_t expect = 0;
                      const int64_t first = in.tq / 2, n = std::min<int64_t>(64, in.tq - first);
                      for (int64_t i = 0; i < n; ++i) expect += std::max<int64_t>(0, first + i * (in.tq - first) / n + 1 - v.delta);
                      int64_t sum = 0;
                      for (int64_t c : v.histogram.counts) sum += c;
                      if (v.histogram.pairs != expect || sum != expect)
                        return fail("histogram holds %lld pairs, expected %lld", v.histogram.pairs, expect);
                      if (!(v.histogram.kl_to_normal >= 0)) return "KL is not a number";
                      return "";
                    }});
  // 9. Generate with both backends.
  steps_.push_back({"generate 12 tokens with dense and HiP",
                    [](AppState& s) {
                      s.generate_tokens = 12;
                      ++s.generate_id;
                      s.focus_panel = "generate";
                    },
                    [](const AppState& s, const Snapshot& snap) {
                      return snap.generate && snap.generate->id == s.generate_id && !snap.generate->running &&
                             snap.fresh(kStageGenerate);
                    },
                    [this](AppState&, const Snapshot& s) -> std::string {
                      const GenerateView& g = *s.generate;
                      if (g.dense_tokens <= 0 || g.hip_tokens <= 0 || g.dense_text.empty() || g.hip_text.empty())
                        return "a side generated nothing";
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "generated");
                      return "";
                    }});
  // 10. Screenshot of the main window with the mask view and the stepper side by side.
  steps_.push_back({"screenshot",
                    [this](AppState& s) {
                      s.focus_panel = "mask";
                      s.step = 1 << 20;
                      mouse_x = 0.40f;  // over the mask view: the screenshot shows a hover readout
                      mouse_y = 0.55f;
                    },
                    [](const AppState& s, const Snapshot&) { return s.focus_panel.empty(); },
                    [this](AppState& s, const Snapshot&) -> std::string {
                      if (s.focus_panel.empty() && mark_ != -7) {
                        s.focus_panel = "stepper";
                        mark_ = -7;
                        return kMore;
                      }
                      if (!s.focus_panel.empty()) return kMore;
                      if (!screenshot_.empty()) pending_screenshot_ = screenshot_;
                      return "";
                    },
                    30, 4});
  // 11. The help window lists the shortcuts.
  steps_.push_back({"help window",
                    [](AppState& s) { s.show_help = true; },
                    [](const AppState&, const Snapshot&) { return true; },
                    [this](AppState& s, const Snapshot&) -> std::string {
                      if (!s.show_help) return "the help window closed by itself";
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "help");
                      return "";  // closed by the next step: this frame is still to be drawn
                    },
                    30, 3});
  // 12. The light theme, for a look (the screenshot shows the side-by-side view).
  steps_.push_back({"light theme",
                    [](AppState& s) {
                      s.show_help = false;
                      s.dark = false;
                      s.focus_panel = "compare";
                    },
                    [](const AppState&, const Snapshot&) { return true; },
                    [this](AppState& s, const Snapshot&) -> std::string {
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "light");
                      mouse_x = 0.01f, mouse_y = 0.99f;
                      s.dark = true;
                      return "";
                    },
                    30, 4});
}

// Captures: the current run written with the captures API, reopened read-only in every view; a
// damaged copy is refused with the reader's error; closing returns to the live run.
void SelfTest::build_capture_steps() {
  struct Live {
    std::string path, damaged;
    std::shared_ptr<const AnalysisView> analysis;
    std::shared_ptr<const LayerMaskSnapshot> masks;
    std::shared_ptr<const DenseView> dense;
    int generate_id = 0;
  };
  auto live = std::make_shared<Live>();
  const std::string stem = (std::filesystem::temp_directory_path() / ("hipstudio-self-test-" + std::to_string(getpid()))).string();
  live->path = stem + ".hipcap";
  live->damaged = stem + "-damaged.hipcap";
  steps_.push_back({"write a capture of the current run and open it",
                    [](AppState& s) { s.focus_panel = "compare"; },
                    [](const AppState& s, const Snapshot& snap) {
                      return !s.capture && snap.analysis && snap.masks && snap.dense && snap.fresh(kStageAnalysis) &&
                             snap.fresh(kStageMasks) && snap.fresh(kStageDense) && snap.fresh(kStageViews) && !snap.busy;
                    },
                    [live](AppState& s, const Snapshot& snap) -> std::string {
                      live->analysis = snap.analysis;
                      live->masks = snap.masks;
                      live->dense = snap.dense;
                      captures::CaptureInfo info;
                      const ModelInfo& m = snap.analysis->model;
                      info.run = {HIPSTUDIO_VERSION, m.display_name, m.architecture, m.device, snap.analysis->prompt};
                      info.dtype = s.dtype;
                      captures::CaptureRequest request;
                      request.views = {"mask"};
                      request.render_images = false;
                      try {  // what `hipstudio capture` does after its paired run
                        captures::write_capture(live->path, captures::build_capture(*snap.analysis->with_deferred_views(), info, request, nullptr));
                      } catch (const std::exception& e) {
                        return std::string("writing the capture failed: ") + e.what();
                      }
                      if (!open_capture_file(s, live->path)) return "the capture did not open: " + s.status_message;
                      return "";
                    },
                    60, 2});
  steps_.push_back({"the capture's mask view and side-by-side numbers equal the live ones, read-only",
                    [](AppState& s) { s.focus_panel = "mask"; },
                    [](const AppState& s, const Snapshot& snap) {
                      return s.capture && snap.analysis == s.capture->analysis && snap.masks && snap.masks->source == snap.analysis &&
                             snap.dense && snap.fresh(kStageMasks) && snap.fresh(kStageDense) && !snap.busy;
                    },
                    [this, live](AppState& s, const Snapshot& snap) -> std::string {
                      const LayerMaskSnapshot& a = *live->masks;
                      const LayerMaskSnapshot& b = *snap.masks;
                      if (a.layer != b.layer || a.hip.blocks != b.hip.blocks || a.hip.counts != b.hip.counts)
                        return "the capture's HiP mask differs from the live one";
                      if (a.oracle.blocks != b.oracle.blocks || a.recall != b.recall) return "the capture's oracle / recall differ";
                      const PairedAnalysis& x = *live->analysis->analysis;
                      const PairedAnalysis& y = *snap.analysis->analysis;
                      if (x.dense.ppl != y.dense.ppl || x.hip.ppl != y.hip.ppl || x.kl != y.kl || x.top1_agreement != y.top1_agreement)
                        return "the capture's perplexity / KL / top-1 differ from the live run";
                      const viz::HeatGrid& d0 = live->dense->probs;
                      const viz::HeatGrid& d1 = snap.dense->probs;
                      if (d0.rows != d1.rows || d0.cols != d1.cols || d0.values.size() != d1.values.size() ||
                          std::memcmp(d0.values.data(), d1.values.data(), d0.values.size() * sizeof(float)) != 0)
                        return "the capture's dense probabilities differ from the live ones";
                      if (snap.model->display_name != live->analysis->model.display_name) return "the capture names another model";
                      // Read-only: edited knobs and the Generate button reach no request.
                      const Request before = make_request(s);
                      s.knobs.k = s.capture->knobs.k == 8 ? 4 : 8;
                      s.applied = s.knobs;
                      ++s.generate_id;
                      const Request after = make_request(s);
                      if (after.hip.hip.k != s.capture->knobs.k || after.generate_id != 0) return "a capture's request follows the sliders";
                      for (int st = 0; st < kStageCount; ++st)
                        if (stage_key(st, before) != stage_key(st, after)) return "editing a knob changed a capture's stage key";
                      s.knobs.k = s.capture->knobs.k;
                      s.applied = s.knobs;
                      if (s.capture->banner.find("(read-only)") == std::string::npos) return "no read-only banner";
                      std::printf("self-test:   %s\n", s.capture->banner.c_str());
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "capture");
                      return "";
                    },
                    120, 3});
  steps_.push_back({"a damaged capture shows the reader's error",
                    [live](AppState& s) {
                      std::ifstream in(live->path, std::ios::binary);
                      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                      std::ofstream(live->damaged, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
                      handle_dropped_path(s, live->damaged);  // as if dropped on the window
                    },
                    [](const AppState&, const Snapshot&) { return true; },
                    [this, live](AppState& s, const Snapshot& snap) -> std::string {
                      if (s.status_message.find("cannot open capture") == std::string::npos ||
                          s.status_message.find(live->damaged) == std::string::npos)
                        return "no reader's error in the status line: " + s.status_message;
                      if (!s.capture || s.capture->path != live->path || snap.analysis != s.capture->analysis)
                        return "the damaged file replaced the capture on screen";
                      std::printf("self-test:   %s\n", s.status_message.c_str());
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "capture-damaged");
                      return "";
                    },
                    30, 3});
  steps_.push_back({"close the capture: back to the live run",
                    [](AppState& s) { close_capture(s); },
                    [live](const AppState&, const Snapshot& snap) {
                      // The masks come from the prefill, before the decode steps replace the analysis.
                      return snap.analysis && snap.analysis != live->analysis && snap.masks &&
                             snap.masks->source->prefill_identity() == snap.analysis->prefill_identity() &&
                             snap.fresh(kStageAnalysis) && snap.fresh(kStageMasks) && !snap.busy;
                    },
                    [live](AppState& s, const Snapshot& snap) -> std::string {
                      std::filesystem::remove(live->path);
                      std::filesystem::remove(live->damaged);
                      if (s.capture) return "the capture is still open";
                      if (snap.model->display_name != live->analysis->model.display_name) return "the live model did not come back";
                      if (snap.masks->hip.blocks != live->masks->hip.blocks) return "the live masks differ after closing the capture";
                      return "";
                    },
                    240, 2});
  build_save_export_steps();
}

// File > Save capture... and File > Export view... through the menu actions' code (the modals call
// the same functions): the capture holds the stepped blocks' traces and the open views' images; the
// exported files are valid PNG / SVG / CSV; a save into an unwritable path shows the error.
void SelfTest::build_save_export_steps() {
  struct Saved {
    std::string path, dir;
    std::vector<SteppedBlock> stepped;
  };
  auto saved = std::make_shared<Saved>();
  const std::string stem = (std::filesystem::temp_directory_path() / ("hipstudio-self-test-save-" + std::to_string(getpid()))).string();
  saved->path = stem + "/run.hipcap";
  saved->dir = stem + "/export";
  auto idle = [](const AppState& s, const Snapshot& snap) {
    return !s.file_task && !s.capture && snap.analysis && snap.fresh(kStageAnalysis) && !snap.busy;
  };
  // The trial typed a path into the field and got the default path with the typed one spliced into
  // it: the field opens with its text selected, so typing replaces it. Then Escape closes it.
  steps_.push_back({"File > Save capture... opens the path modal, typing replaces the path; Escape closes it",
                    [](AppState& s) { s.show_save_capture = true; },
                    idle,
                    [this, n = std::make_shared<int>(0)](AppState& s, const Snapshot&) -> std::string {
                      switch ((*n)++) {
                        case 0: if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "save-modal"); return kMore;
                        case 1:
                          if (!any_popup_open()) return "File > Save capture... opened no modal";
                          if (s.dialogs.save_path.rfind("~/hipstudio-", 0) != 0) return "the save modal has no default path: " + s.dialogs.save_path;
                          type_text = "typed.hipcap";
                          return kMore;
                        case 2: return kMore;
                        case 3:
                          if (s.dialogs.save_path != "typed.hipcap") return "typing did not replace the path: '" + s.dialogs.save_path + "'";
                          key_down = GLFW_KEY_ESCAPE;
                          return kMore;
                        case 4: key_down = -1; return kMore;
                        default: return any_popup_open() ? "Escape did not close the save modal" : "";
                      }
                    },
                    60, 3});
  steps_.push_back({"File > Save capture: the live run with the stepped query blocks",
                    [](AppState& s) {
                      s.focus_panel = "mask";  // the save creates the missing folder `stem` itself
                    },
                    idle,
                    [this, saved](AppState& s, const Snapshot& snap) -> std::string {
                      if (s.stepped_blocks.empty()) return "stepping through the iterations recorded no query block";
                      saved->stepped = s.stepped_blocks;
                      if (!start_save_capture(s, snap, open_capture_views(panels_, s), saved->path)) return "save refused: " + s.status_message;
                      std::printf("self-test:   %s\n", s.status_message.c_str());
                      return "";
                    },
                    60, 2});
  steps_.push_back({"the saved capture reopens with the traces and the images",
                    [](AppState&) {},
                    [](const AppState& s, const Snapshot&) { return !s.file_task; },
                    [this, saved](AppState& s, const Snapshot&) -> std::string {
                      if (!saved_ok(s, saved->path)) return "the save failed: " + s.status_message;
                      std::printf("self-test:   %s\n", s.status_message.c_str());
                      captures::Capture c;
                      try {
                        c = captures::read_capture(saved->path);
                      } catch (const std::exception& e) {
                        return std::string("the saved capture does not read back: ") + e.what();
                      }
                      for (const SteppedBlock& b : saved->stepped) {
                        const bool found = std::any_of(c.traces.begin(), c.traces.end(), [&](const captures::CapturedTrace& t) {
                          return t.layer == b.layer && t.trace.head == b.head && t.trace.query_block == b.query_block;
                        });
                        if (!found) return fail("the capture lacks the trace of stepped block L%lld, query block %lld", b.layer, b.query_block);
                      }
                      bool png = false, svg = false;
                      for (const auto& im : c.images) {
                        if (im.name.rfind("mask_", 0) == 0 && is_png_bytes(im.bytes)) png = true;
                        if (im.name.size() > 4 && im.name.compare(im.name.size() - 4, 4, ".svg") == 0 && is_svg_text(im.bytes)) svg = true;
                      }
                      if (!png || !svg) return fail("the capture's images lack a mask PNG (%lld) or a plot SVG (%lld)", png, svg);
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "saved");
                      return "";
                    },
                    240, 2});
  steps_.push_back({"File > Export view: mask PNG, plot SVGs, metrics CSV",
                    [](AppState&) {},
                    idle,
                    [saved](AppState& s, const Snapshot& snap) -> std::string {
                      ExportOptions o;
                      o.dir = saved->dir;
                      o.px = 256;
                      // What is on screen is what gets exported: head 1 and Delta 5 (not a default Delta).
                      s.head = 1;
                      s.delta = 5;
                      if (!start_export_view(s, snap, o)) return "export refused: " + s.status_message;
                      return "";
                    },
                    60, 2});
  steps_.push_back({"the exported files exist and are valid",
                    [](AppState&) {},
                    [](const AppState& s, const Snapshot&) { return !s.file_task; },
                    [saved](AppState& s, const Snapshot&) -> std::string {
                      if (s.last_exported.empty()) return "the export failed: " + s.status_message;
                      std::printf("self-test:   %s\n", s.status_message.c_str());
                      int png = 0, svg = 0, csv = 0;
                      for (const std::string& p : s.last_exported) {
                        const std::string bytes = read_file_bytes(p);
                        const std::string ext = std::filesystem::path(p).extension().string();
                        if (ext == ".png" && is_png_bytes(bytes)) ++png;
                        else if (ext == ".svg" && is_svg_text(bytes)) ++svg;
                        else if (ext == ".csv" && bytes.rfind("layer,head", 0) == 0) ++csv;
                        else return "not a valid export: " + p;
                      }
                      if (png != 1 || svg < 5 || csv != 1) return fail("expected a mask PNG, figure SVGs and a CSV; got %lld PNG, %lld SVG", png, svg);
                      for (const std::string name : {"mask_L1_H1.png", "mask_L1_H1.svg", "locality_L1_H1_D5.svg"}) {
                        const bool found = std::any_of(s.last_exported.begin(), s.last_exported.end(),
                                                       [&](const std::string& p) { return std::filesystem::path(p).filename() == name; });
                        if (!found) return "the export lacks " + name + " (the viewed layer, head and Delta)";
                      }
                      if (std::none_of(s.last_exported.begin(), s.last_exported.end(),
                                       [](const std::string& p) { return p.find("/iterations_L1_H1_Q") != std::string::npos; }))
                        return "the export lacks the viewed query block's iteration figure";
                      const std::string loc = read_file_bytes(saved->dir + "/locality_L1_H1_D5.svg");
                      if (loc.find("observed (Delta = 5)") == std::string::npos) return "the locality figure's histogram is not at the viewed Delta 5";
                      return "";
                    },
                    240, 2});
  build_export_shot_steps();
  steps_.push_back({"File > Export view at full detail: the mask in PNG tiles",
                    [](AppState&) {},
                    idle,
                    [saved](AppState& s, const Snapshot& snap) -> std::string {
                      ExportOptions o;
                      o.dir = saved->dir + "-tiles";
                      o.tiles = true;
                      o.tile = 16;  // several tiles even for a short prompt
                      s.last_exported.clear();
                      if (!start_export_view(s, snap, o)) return "export refused: " + s.status_message;
                      return "";
                    },
                    60, 2});
  steps_.push_back({"the tiles are valid PNGs",
                    [](AppState&) {},
                    [](const AppState& s, const Snapshot&) { return !s.file_task; },
                    [](AppState& s, const Snapshot&) -> std::string {
                      int tiles = 0;
                      for (const std::string& p : s.last_exported)
                        if (p.find("_tiles/mask_r") != std::string::npos) {
                          if (!is_png_bytes(read_file_bytes(p))) return "not a PNG tile: " + p;
                          ++tiles;
                        }
                      if (tiles < 2) return fail("expected several mask tiles, got %lld: ", tiles) + s.status_message;
                      std::printf("self-test:   %s (%d tiles)\n", s.status_message.c_str(), tiles);
                      return "";
                    },
                    240, 2});
  steps_.push_back({"saving into an unwritable path shows the error and the app goes on",
                    [](AppState&) {},
                    idle,
                    [this](AppState& s, const Snapshot& snap) -> std::string {
                      if (!s.file_task) {
                        if (s.status_message.rfind("cannot save capture /proc", 0) == 0) {
                          std::printf("self-test:   %s\n", s.status_message.c_str());
                          if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "save-error");
                          return "";
                        }
                        if (!start_save_capture(s, snap, {"mask"}, "/proc/hipstudio.hipcap")) return "save refused: " + s.status_message;
                      }
                      return kMore;
                    },
                    120, 2});
  steps_.push_back({"the live views still update after the failed save",
                    [](AppState& s) { s.layer = s.layer == 1 ? 2 : 1; },
                    [](const AppState& s, const Snapshot& snap) {
                      return snap.masks && snap.masks->layer == s.layer && snap.fresh(kStageMasks) && !snap.busy;
                    },
                    [stem](AppState& s, const Snapshot&) -> std::string {
                      std::filesystem::remove_all(stem);
                      s.layer = 1;
                      return "";
                    },
                    120, 2});
}

void SelfTest::build_frame_steps() {
  // 4096 tokens by default; HIPSTUDIO_SELF_TEST_TOKENS=32768 (say) measures longer prompts.
  const char* env = std::getenv("HIPSTUDIO_SELF_TEST_TOKENS");
  const int64_t tokens = env && std::atoll(env) >= 256 ? std::atoll(env) : 4096;
  tokens_ = tokens;
  steps_.push_back({"synthetic " + std::to_string(tokens) + "-token mask on screen",
                    [tokens](AppState& s) {
                      s.synthetic_tokens = tokens;
                      s.knobs = HipKnobs{};
                      s.knobs.k = 512;
                      s.knobs.b_q = 32;
                      s.knobs.b_k = 2;
                      s.knobs.sink = 4;
                      s.knobs.window = 64;
                      s.knobs.l_d = 0;
                      s.layer = 0;
                      s.head = 0;
                      s.query_block = 100;
                      s.mask_view = MaskViewState{};
                      s.focus_panel = "mask";
                    },
                    [tokens](const AppState&, const Snapshot& s) {
                      return s.masks && s.masks->source->tokens() == tokens && s.fresh(kStageMasks) && !s.busy;
                    },
                    [this](AppState& s, const Snapshot&) -> std::string {
                      s.focus_panel = "stepper";
                      measuring_ = true;
                      animate_ = false;
                      return "";
                    },
                    300, 3});
  steps_.push_back({"measure frames",
                    [](AppState&) {},
                    [](const AppState&, const Snapshot&) { return true; },
                    [this](AppState& s, const Snapshot&) -> std::string {
                      if (measured_ < frames_) {
                        animate_ = measured_ >= frames_ / 2;
                        if (animate_) {  // zoom in and out around a moving centre: a new LOD texture each frame
                          const double ph = (measured_ - frames_ / 2) * 0.05, T = static_cast<double>(tokens_);
                          s.mask_view.span = T * (0.55 + 0.45 * std::cos(ph));
                          s.mask_view.x0 = (T - s.mask_view.span) * (0.5 + 0.5 * std::sin(ph * 0.7));
                          s.mask_view.y0 = (T - s.mask_view.span) * (0.5 + 0.5 * std::cos(ph * 0.3));
                        }
                        return kMore;
                      }
                      measuring_ = false;
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, std::to_string(tokens_));
                      if (!frame_stats_) return "";
                      std::vector<double> all = static_ms_;
                      all.insert(all.end(), moving_ms_.begin(), moving_ms_.end());
                      std::printf("frame-stats: %zu frames with a %lld-token mask on screen (synthetic Q/K, 2 heads)\n", all.size(),
                                  static_cast<long long>(tokens_));
                      std::printf("frame-stats: all     median %.2f ms, p99 %.2f ms\n", percentile(all, 0.5), percentile(all, 0.99));
                      std::printf("frame-stats: static  median %.2f ms, p99 %.2f ms (%zu frames)\n", percentile(static_ms_, 0.5),
                                  percentile(static_ms_, 0.99), static_ms_.size());
                      std::printf("frame-stats: zooming median %.2f ms, p99 %.2f ms (%zu frames, LOD texture rebuilt every frame)\n",
                                  percentile(moving_ms_, 0.5), percentile(moving_ms_, 0.99), moving_ms_.size());
                      std::printf("frame-stats: parts (median): build UI %.2f ms, GL render %.2f ms, swap %.2f ms; "
                                  "process CPU per frame %.2f ms (all threads, Mesa's rasteriser included)\n",
                                  percentile(ui_ms_, 0.5), percentile(render_ms_, 0.5), percentile(swap_ms_, 0.5),
                                  percentile(cpu_ms_, 0.5));
                      return "";
                    },
                    600, 1});
}

bool SelfTest::paces_like_a_user() const { return scale_ && !scale_measuring_frames(*scale_); }

void SelfTest::record_frame(double ms, double cpu_ms) {
  if (scale_) scale_record_frame(*scale_, ms);
  if (!measuring_ || measured_ >= frames_) return;
  cpu_ms_.push_back(cpu_ms);
  (animate_ ? moving_ms_ : static_ms_).push_back(ms);
  ++measured_;
}

void SelfTest::record_parts(double ui_ms, double render_ms, double swap_ms) {
  if (!measuring_ || measured_ >= frames_) return;
  ui_ms_.push_back(ui_ms);
  render_ms_.push_back(render_ms);
  swap_ms_.push_back(swap_ms);
}

std::string SelfTest::take_screenshot_request() {
  std::string p;
  p.swap(pending_screenshot_);
  return p;
}

void SelfTest::tick(AppState& s, const Snapshot& snap, double now) {
  if (finished_) return;
  if (current_ >= steps_.size()) {
    if (soak_ && !aborted_ && soak_->end_loop(failures_ > loop_failures_)) {
      current_ = loop_start_;  // another soak loop
      loop_failures_ = failures_;
      return;
    }
    if (soak_) {
      failures_ += soak_->finish();
      soak_.reset();  // removes its temporary folder
    }
    if (scale_) {
      if (scale_finish(*scale_) > 0 && failures_ == 0) ++failures_;
      scale_.reset();
    }
    if (pending_screenshot_.empty()) finished_ = true;
    return;
  }
  SelfTestStep& st = steps_[current_];
  if (!started_) {
    std::printf("self-test: %s\n", st.name.c_str());
    std::fflush(stdout);
    st.start(s);
    started_ = true;
    step_start_ = now;
    step_frames_ = 0;
    return;
  }
  ++step_frames_;
  auto next = [&] {
    ++current_;
    started_ = false;
  };
  if (now - step_start_ > st.timeout_s) {
    std::printf("self-test: FAIL %s: timed out after %.0f s (busy %d, %s)\n", st.name.c_str(), st.timeout_s, snap.busy,
                snap.what.c_str());
    std::string why = "timed out after " + std::to_string(static_cast<long>(st.timeout_s)) + " s (" +
                      (snap.busy ? "busy: " + snap.what : std::string("idle")) + ")";
    for (int i = 0; i < kStageCount; ++i)
      if (!snap.error[i].empty()) {
        std::printf("self-test:   %s error: %s\n", stage_name(i), snap.error[i].c_str());
        why += std::string("; ") + stage_name(i) + " error: " + snap.error[i];
      }
    if (!s.invalid.empty()) why += "; knobs refused: " + s.invalid;
    if (scale_) scale_step_failed(*scale_, st.name, why);
    ++failures_;
    if (st.fatal) current_ = steps_.size() - 1, aborted_ = true;  // next() ends the script
    next();
    return;
  }
  if (step_frames_ < st.min_frames || !st.ready(s, snap)) return;
  const std::string r = st.check(s, snap);
  if (r == kMore) return;
  if (r.empty()) {
    std::printf("self-test: ok   %s (%.1f s)\n", st.name.c_str(), now - step_start_);
  } else {
    std::printf("self-test: FAIL %s: %s\n", st.name.c_str(), r.c_str());
    if (scale_) scale_step_failed(*scale_, st.name, r);
    ++failures_;
    if (st.fatal) current_ = steps_.size() - 1, aborted_ = true;  // next() ends the script
  }
  std::fflush(stdout);
  next();
}

}  // namespace hipstudio::gui
