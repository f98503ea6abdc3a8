#include "app/gui/save_export.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <future>
#include <mutex>
#include <stdexcept>

#include "app/gui/capture_view.h"
#include <imgui.h>

#include "app/gui/worker.h"
#include "captures/atomic_file.h"
#include "captures/capture.h"
#include "captures/export_view.h"
#include "captures/figures.h"
#include "captures/mask_png.h"
#include "engine/formats/errors.h"

namespace hipstudio::gui {

namespace fs = std::filesystem;

// What the background thread reports while it runs (the UI reads it every frame).
struct TaskProgress {
  std::mutex mutex;
  std::string stage;
  void set(const std::string& s) {
    std::lock_guard<std::mutex> lock(mutex);
    stage = s;
  }
  std::string get() {
    std::lock_guard<std::mutex> lock(mutex);
    return stage;
  }
};

struct TaskOutcome {
  bool ok = false;
  bool save = false;               // a capture save (else an export)
  std::string message;             // for the status line
  std::vector<std::string> paths;  // written
};

struct FileTask {
  std::shared_ptr<TaskProgress> progress = std::make_shared<TaskProgress>();
  std::future<TaskOutcome> outcome;
};

namespace {

std::string home_dir() {
  const char* h = std::getenv("HOME");
  return h && *h ? h : ".";
}

std::string stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d-%H%M%S", &tm);
  return buf;
}

// The offloading configuration the Cache panel simulates (compute_offload), the `capture`
// command's defaults otherwise (vector page table, LRU, automatic bank sizes).
offload::OffloadConfig offload_config(const AnalysisView& a, double cache_factor) {
  offload::OffloadConfig c;
  const auto& opt = a.analysis->options;
  c.cache_factor = cache_factor;
  c.k = opt.hip.hip.k;
  c.b_sk = opt.hip.hip.b_sk;
  c.context_tokens = a.tokens() + static_cast<int64_t>(a.analysis->decode.size());
  c.mask_bytes_per_token = a.model.head_dim * a.model.element_bytes;
  c.sparse_bytes_per_token = 2 * a.model.head_dim * a.model.element_bytes;
  return c;
}

captures::CaptureInfo capture_info(const AppState& s, const AnalysisView& a, const std::vector<std::string>& views) {
  captures::CaptureInfo info;
  const ModelInfo& m = a.model;
  info.run = {HIPSTUDIO_VERSION, m.display_name, m.architecture, m.device, a.prompt};
  info.dtype = s.dtype;  // the model's weights are not hashed here (`hipstudio capture` does)
  info.views = views;
  // The tokens' text: a live run's from the tokenizer, a reopened capture's where it held them (its
  // "#id" stand-ins are not text). Only complete lists: the writer takes one piece per token.
  if (!s.capture || s.capture->has_pieces) {
    const PairedAnalysis& pa = *a.analysis;
    if (a.prompt_tokens.size() == pa.prompt_ids.size()) info.prompt_pieces = a.prompt_tokens;
    if (a.decode_dense_text.size() == pa.decode.size() && a.decode_hip_text.size() == pa.decode.size() && !pa.decode.empty()) {
      info.decode_dense_pieces = a.decode_dense_text;
      info.decode_hip_pieces = a.decode_hip_text;
    }
  }
  return info;
}

void start_task(AppState& s, const std::string& what, std::function<TaskOutcome(TaskProgress&)> body) {
  auto task = std::make_shared<FileTask>();
  task->progress->set(what);
  auto progress = task->progress;
  task->outcome = std::async(std::launch::async, [progress, body = std::move(body)] { return body(*progress); });
  s.file_task = task;
  s.status_message = what;
}

}  // namespace

std::string expand_home(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) return home_dir() + path.substr(1);
  return path;
}

bool save_button(const char* label, const std::string& path, bool folder, bool enter, SaveQuestion& question,
                 std::string& error) {
  if (question.asking()) {
    // The question adds lines to the modal: its height fits them (0 asks ImGui to fit that axis).
    ImGui::SetWindowSize(ImVec2(ImGui::GetWindowWidth(), 0.0f));
    return question.draw(error);
  }
  return (ImGui::Button(label) || enter) && question.check(expand_home(path), folder, error);
}

std::vector<SteppedBlock> traceable_blocks(const AppState& s, const Snapshot& snap) {
  std::vector<SteppedBlock> out;
  if (!snap.analysis || !snap.analysis->analysis) return out;
  const PairedAnalysis& pa = *snap.analysis->analysis;
  const int64_t b_q = std::max<int64_t>(1, pa.options.hip.hip.b_q);
  const int64_t blocks = (snap.analysis->tokens() + b_q - 1) / b_q;
  for (const SteppedBlock& b : s.stepped_blocks) {  // blocks stepped under an earlier prompt may not fit this one
    const LayerInputs* in = pa.find_inputs(b.layer);
    if (in && b.head >= 0 && b.head < in->heads && b.query_block >= 0 && b.query_block < blocks) out.push_back(b);
  }
  return out;
}

std::string default_capture_path() { return "~/hipstudio-" + stamp() + ".hipcap"; }
std::string default_export_dir() { return "~/hipstudio-export-" + stamp(); }

std::string save_unavailable(const AppState& s, const Snapshot& snap) {
  if (s.file_task) return "a save or export is still running";
  if (s.capture) return "a capture is open (it is already a file; File > Close capture returns to the live run)";
  if (!snap.analysis || !snap.analysis->analysis || !snap.fresh(kStageAnalysis) || !snap.fresh(kStageDecode))
    return "no finished live run yet";
  if (snap.analysis->model.synthetic) return "the synthetic frame-stats run has no model to capture";
  if (snap.analysis->analysis->inputs.empty()) return "the run kept no Q/K/V";
  size_t computing = 0, not_kept = 0;
  for (int64_t l : snap.analysis->views_pending()) ++(snap.analysis->has_inputs(l) ? computing : not_kept);
  if (not_kept)
    return "this long prompt kept " + std::to_string(snap.analysis->analysis->inputs.size()) +
           " layer's Q/K/V only (GPU memory), and a capture holds every layer's numbers: capture it with "
           "`hipstudio capture` on the command line, which computes them layer by layer";
  if (computing) return "the other layers' views are still being computed (" + std::to_string(computing) + " left)";
  return "";
}

std::vector<std::string> open_capture_views(const std::vector<std::unique_ptr<Panel>>& panels, const AppState& s) {
  static const std::vector<std::pair<std::string, std::string>> panel_view{
      {"mask", "mask"}, {"stepper", "iterations"}, {"locality", "locality"}, {"kvcache", "cache"}, {"latency", "latency"}};
  std::vector<std::string> views;
  for (const auto& [panel_id, view] : panel_view) {
    // C++17 lambdas cannot capture a structured binding (clang rejects it): capture a plain reference.
    const bool open = std::any_of(panels.begin(), panels.end(),
                                  [&panel = panel_id](const auto& p) { return p->open && p->id() == panel; });
    if (open || (view == "iterations" && !s.stepped_blocks.empty())) views.push_back(view);
  }
  if (views.empty()) views.push_back("mask");
  return views;
}

bool start_save_capture(AppState& s, const Snapshot& snap, const std::vector<std::string>& views, const std::string& path_in) {
  const std::string why = save_unavailable(s, snap);
  if (!why.empty()) {
    s.status_message = "cannot save capture: " + why;
    return false;
  }
  const std::string path = expand_home(path_in);
  if (path.empty()) {
    s.status_message = "cannot save capture: no file name";
    return false;
  }
  const std::shared_ptr<const AnalysisView> a = snap.analysis;
  // What `hipstudio capture --views V --trace L:H:QB...` asks for with the run's parameters.
  captures::CaptureRequest request;
  request.views = views;
  for (const SteppedBlock& b : traceable_blocks(s, snap)) request.traces.push_back({b.layer, b.head, b.query_block});
  const Request r = clamp_selection(*a, make_request(s));
  request.locality_shown_deltas = {r.delta};
  request.locality_bins = r.bins;
  request.render_images = false;  // rendered below, of the viewed head and Delta
  captures::FigureOptions figures;
  figures.head = r.head;
  figures.delta = r.delta;
  const captures::CaptureInfo info = capture_info(s, *a, views);
  const offload::OffloadConfig oc = offload_config(*a, r.cache_factor);
  start_task(s, "saving capture " + path + ": computing the views...", [a, request, info, oc, path, figures](TaskProgress& progress) {
    TaskOutcome out;
    out.save = true;
    try {
      // The dialog asked before a missing folder (save_button); a file where a folder should be,
      // or a read-only place, still fails with the reason.
      const fs::path parent = fs::absolute(path).parent_path();
      std::error_code ec;
      fs::create_directories(parent, ec);
      captures::check_folder_writable(fs::absolute(path).string(), "save");  // before the long build
      captures::Capture c = captures::build_capture(*a->with_deferred_views(), info, request, &oc);
      c.images = captures::render_capture_images(c, figures);
      progress.set("saving capture " + path + ": writing...");
      captures::write_capture(path, c);
      out.ok = true;
      out.paths = {path};
      char buf[160];
      std::snprintf(buf, sizeof buf, " (%.1f MB, %zu traces, %zu images)", static_cast<double>(fs::file_size(path)) / 1e6,
                    c.traces.size(), c.images.size());
      out.message = "saved capture " + path + buf;
    } catch (const std::exception& e) {  // InputError (read-only folder, disk full), bad_alloc
      out.message = "cannot save capture " + path + ": " + e.what();
    }
    return out;
  });
  return true;
}

const std::vector<std::string>& export_figure_choices() {
  static const std::vector<std::string> choices{"mask", "iterations", "locality", "hit-ratio", "latency", "metrics"};
  return choices;
}

bool start_export_view(AppState& s, const Snapshot& snap, const ExportOptions& options, const std::string& only, bool pdf) {
  if (!only.empty() && std::find(export_figure_choices().begin(), export_figure_choices().end(), only) == export_figure_choices().end()) {
    s.status_message = "cannot export: no figure '" + only + "'";
    return false;
  }
  std::string why = save_unavailable(s, snap);
  if (why.rfind("a capture is open", 0) == 0) why.clear();  // exporting a capture's view is fine
  if (!why.empty()) {
    s.status_message = "cannot export: " + why;
    return false;
  }
  ExportOptions o = options;
  o.dir = expand_home(o.dir);
  if (o.dir.empty()) {
    s.status_message = "cannot export: no folder";
    return false;
  }
  const std::shared_ptr<const AnalysisView> a = snap.analysis;
  const Request r = clamp_selection(*a, make_request(s));
  const captures::CaptureInfo info = capture_info(s, *a, {"mask", "iterations", "locality", "cache", "latency"});
  const offload::OffloadConfig oc = offload_config(*a, r.cache_factor);
  const int64_t layer = r.layer, head = r.head, delta = r.delta, bins = r.bins, query_block = r.query_block;
  start_task(s, "exporting layer " + std::to_string(layer) + " head " + std::to_string(head) + " to " + o.dir + "...",
             [a, info, oc, o, only, pdf, layer, head, delta, bins, query_block](TaskProgress& progress) {
    TaskOutcome out;
    try {
      // The exporters take a capture: an in-memory one of this run, without images, holding the
      // viewed query block's trace and the viewed Delta's histogram.
      captures::CaptureRequest request;
      request.views = info.views;
      request.render_images = false;
      request.traces = {{layer, head, query_block}};
      request.locality_shown_deltas = {delta};
      request.locality_bins = bins;
      const captures::Capture c = captures::build_capture(*a->with_deferred_views(), info, request, &oc);
      progress.set("exporting to " + o.dir + ": writing...");
      fs::create_directories(o.dir);
      const std::string lh = "_L" + std::to_string(layer) + "_H" + std::to_string(head);
      auto req = [&](const char* what, const char* format, int64_t px = 0, int64_t d = -1, bool curves = false) {
        captures::ExportRequest r;
        r.what = what, r.format = format, r.layer = layer, r.head = head, r.delta = d, r.px = px;
        r.style = o.dark_style ? "dark" : "paper";
        r.with_curves = curves;
        return r;
      };
      auto put = [&](const std::string& name, const captures::ExportRequest& er) {
        if (!only.empty() && er.what != only) return;
        out.paths.push_back((fs::path(o.dir) / name).string());
        captures::write_file_atomic(out.paths.back(), captures::export_view(c, er));
        if (pdf && er.format == "svg") {  // the same drawing as PDF beside it
          captures::ExportRequest as_pdf = er;
          as_pdf.format = "pdf";
          out.paths.push_back((fs::path(o.dir) / (name.substr(0, name.size() - 4) + ".pdf")).string());
          captures::write_file_atomic(out.paths.back(), captures::export_view(c, as_pdf));
        }
      };
      if (!only.empty() && only != "mask") {
        // No mask wanted: no tiles either.
      } else if (o.tiles) {
        const fs::path tdir = fs::path(o.dir) / ("mask" + lh + "_tiles");
        fs::create_directories(tdir);
        const captures::MaskExport mask =
            captures::mask_export(c.masks.at(static_cast<size_t>(c.view_index(layer))), c.analysis.options.hip.hip, a->tokens(), head);
        const int64_t cols = (mask.full_width() + o.tile - 1) / o.tile;
        const auto tiles = captures::render_mask_tiles(mask, o.tile);
        for (size_t i = 0; i < tiles.size(); ++i) {
          out.paths.push_back((tdir / ("mask_r" + std::to_string(i / cols) + "_c" + std::to_string(i % cols) + ".png")).string());
          captures::write_file_atomic(out.paths.back(), captures::encode_png(tiles[i]));
        }
      } else {
        put("mask" + lh + ".png", req("mask", "png", o.px));
      }
      put("mask" + lh + ".svg", req("mask", "svg"));
      put("iterations" + lh + "_Q" + std::to_string(query_block) + ".svg", req("iterations", "svg"));
      if (!c.locality.empty())
        put("locality" + lh + "_D" + std::to_string(delta) + ".svg", req("locality", "svg", 0, delta, true));
      put("hit_ratio.svg", req("hit-ratio", "svg"));
      put("latency.svg", req("latency", "svg"));
      {
        captures::ExportRequest metrics = req("metrics", "csv");
        metrics.layer = metrics.head = -1;
        put("metrics.csv", metrics);
      }
      if (out.paths.empty()) throw std::runtime_error("this run has no " + only + " view to export");
      out.ok = true;
      out.message = "exported " + std::to_string(out.paths.size()) + " files (" + (only.empty() ? "every figure" : only) + ", layer " + std::to_string(layer) + ", head " +
                    std::to_string(head) + ") to " + o.dir;
    } catch (const std::exception& e) {
      out.message = "cannot export to " + o.dir + ": " + e.what();
    }
    return out;
  });
  return true;
}

bool poll_file_task(AppState& s) {
  if (!s.file_task) return false;
  FileTask& t = *s.file_task;
  if (t.outcome.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    s.status_message = t.progress->get();
    return true;
  }
  const TaskOutcome out = t.outcome.get();
  s.file_task.reset();
  s.status_message = out.message;
  if (out.ok && !out.save) {
    s.last_exported = out.paths;
    // The figure opens read back from its file; full-detail tiles are not a figure to preview.
    for (const std::string& p : out.paths)
      if (p.find("/mask_L") != std::string::npos && p.find("_tiles/") == std::string::npos && p.size() > 4 &&
          p.compare(p.size() - 4, 4, ".png") == 0)
        s.preview_path = p;
  }
  if (!out.ok) std::fprintf(stderr, "hipstudio gui: %s\n", out.message.c_str());
  return false;
}

}  // namespace hipstudio::gui
