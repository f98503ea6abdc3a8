#pragma once
// A capture: one paired analysis and everything computed from it (masks of every layer and head,
// oracle and random baselines, search traces, score locality, offloading counters, latency), with
// the sides of the other selection methods compared against the same dense run keyed by name, frozen
// in one self-describing file that reopens without the model. The GUI shows a capture's
// PairedAnalysis exactly as it shows a live one; `hipstudio report` turns it into figures and tables.
//
// File format (docs/CAPTURES.md): an uncompressed ZIP archive (zip_store.h),
// so `unzip -l`, Python's zipfile and numpy.load (as an NpzFile) open it, holding
//   manifest.json            format/version, tool, model identity and hash, prompt text, tokens and
//                            their text pieces, every HiP and run parameter, the methods with their
//                            values, device, dtype, date, the list of arrays with dtype and shape,
//                            the content hash, and "analysis": the `analyze` JSON of the first method
//   <group>/<name>.npy       the named arrays (analysis/, methods/, inputs/, masks/, traces/, locality/, offload/)
//   images/<view>.png|.svg   rendered views (optional)
// written atomically (temporary file, fsync, rename), the arrays streamed in name order and the
// manifest last in the file, first in its directory.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "captures/analysis_json.h"
#include "engine/analysis/method_runs.h"
#include "engine/analysis/paired_result.h"
#include "engine/offload/offload_simulator.h"
#include "kernels/hip_trace.h"
#include "kernels/mask_reference.h"
#include "kernels/score_locality.h"

namespace hipstudio::captures {

inline constexpr const char* kCaptureFormat = "hipstudio.capture";
// Version 2: the per-layer arrays (inputs, masks, locality) cover the manifest's dims.view_layers
// (version 1: every layer) and inputs may be stored in the run's half-precision dtype.
// Version 3: every selection method's side and masks keyed by the method's name (methods/<name>/,
// masks/L<l>/<name>/), the manifest's "methods" list naming them in order with their values.
inline constexpr int kCaptureFormatVersion = 3;  // what this build writes and the newest it reads
inline constexpr int kCaptureOldestReadable = 1;

// The views a capture can hold (the GUI's panels); `capture --views` takes these names.
inline const std::vector<std::string>& capture_view_names() {
  static const std::vector<std::string> names{"mask", "iterations", "locality", "cache", "latency"};
  return names;
}

struct CaptureInfo {
  RunInfo run;                     // tool version, model name, architecture, device, prompt text
  std::string model_sha256;        // of the weight files, as the caller computed it ("" when unknown)
  std::string dtype;               // "f32", "bf16", "f16"
  std::string created;             // ISO 8601 UTC ("2026-11-23T01:30:00Z"); build_capture fills it when empty
  std::vector<std::string> views;  // views captured, a subset of capture_view_names()
  // Each token's text, the tokenizer's token_text of its id (what the live views show), so a capture
  // reopened without the model shows text: (prompt ids), and the decode records' dense and HiP
  // greedy tokens, (decode records) each. Optional: empty where the writer had no tokenizer (and in
  // captures written before the manifest held them); readers show "#id" then.
  std::vector<std::string> prompt_pieces;
  std::vector<std::string> decode_dense_pieces, decode_hip_pieces;
};


// Fills info's pieces with `text(id)` (the tokenizer's token_text) of every prompt token and every
// decode record's two tokens.
void set_token_pieces(CaptureInfo& info, const PairedAnalysis& analysis, const std::function<std::string(int32_t)>& text);

struct CapturedTrace {
  int64_t layer = 0;
  hip::MaskTrace trace;  // head and query block inside
  // (hi - lo) oracle block scores of the block (engine/views/trace_view.h), block lo first; empty in
  // a capture written before traces held them (its oracle blocks then come from the mask view).
  std::vector<double> oracle_scores;
};

struct TraceSpec {
  int64_t layer = 0, head = 0, query_block = 0;
};

// One selection method's sparse side as a capture holds it: its metrics against the dense side and,
// per view layer, its own mask with the oracle and random baselines computed on that side's Q/K
// (past the first HiP layer each method's side has its own hidden states, so its own baselines).
struct CapturedMethod {
  hip::methods::MethodChoice choice;      // name and every parameter's value
  SideResult side;                        // nll, mean_nll, ppl, generated tokens, latency
  double kl = 0.0, top1_agreement = 0.0;  // against the dense side
  int64_t mask_refreshes = 0;             // its decode steps' r_m refreshes
  std::vector<std::vector<HeadQuality>> quality;  // (layers, heads): its mask's and the random baseline's
  std::vector<LayerMaskViews> masks;      // (view layers) or empty; masks[i].hip is the method's mask
};

// {"ppl", "kl", "top1_agreement", "recall", "mass", "out_rel_err"}: its scalars and the means over
// the layers HiP replaces (NaN: null), the manifest's copy for readers that open no array.
nlohmann::json method_summary_json(const CapturedMethod& m, const std::vector<LayerQuality>& layers);
// One quality field of the method averaged as every summary reports it (hip_layer_means.h), with
// `layers` saying which layers HiP replaces.
double method_mean(const CapturedMethod& m, const std::vector<LayerQuality>& layers, double HeadQuality::*field);

// The method's side of `a` (PairedAnalysis::hip and its per-head numbers) with `masks`.
CapturedMethod captured_method(const hip::methods::MethodChoice& choice, const PairedAnalysis& a,
                               std::vector<LayerMaskViews> masks);

struct Capture {
  int format_version = kCaptureFormatVersion;  // as read (a written capture is always the current one)
  nlohmann::json manifest;                     // as read, for displaying parameters; null for one built in memory
  CaptureInfo info;
  PairedAnalysis analysis;                     // with inputs: what on-demand views compute from
  // Every method the capture holds, in the order captured (format 1 and 2 captures: the one they
  // held). methods[0] is the side `analysis` (hip, kl, top-1, per-head quality) and `masks` show,
  // HiP's for `capture`'s default; the other views (traces, locality, offload, latency) are of it.
  std::vector<CapturedMethod> methods;

  bool has_offload = false;                    // the "cache" view
  offload::OffloadConfig offload_config;
  offload::OffloadResult offload;

  // Layers whose per-layer views the capture holds, ascending: the analysis' kept layers (`capture
  // --inputs-layers`). masks[i] and locality[i] belong to view_layers[i].
  std::vector<int64_t> view_layers;
  // HiP's selection per view layer with the oracle's and the random baseline's: the views layer's
  // result type (engine/views/layer_views.h), the same the analysis and the GUI hold.
  std::vector<LayerMaskViews> masks;  // (view layers) or empty without the "mask" view
  std::vector<CapturedTrace> traces;           // the "iterations" view's query blocks

  hip::LocalityParams locality_params;         // the "locality" view
  std::vector<int64_t> locality_queries;       // query rows pooled, the same for every head
  std::vector<std::vector<hip::ScoreLocality>> locality;  // (view layers, heads) or empty

  struct Image {
    std::string name;   // file name under images/, ending in .png or .svg
    std::string bytes;
  };
  std::vector<Image> images;

  bool has_view(const std::string& view) const;
  const CapturedMethod* find_method(const std::string& name) const;  // null when not held
  std::vector<std::string> method_names() const;
  // Index of `layer` in view_layers, or -1 when the capture holds no per-layer views of it.
  int64_t view_index(int64_t layer) const;
};

struct CaptureRequest {
  std::vector<std::string> views = capture_view_names();
  std::vector<TraceSpec> traces;               // empty: the last query block of head 0 in every HiP view layer
  // The locality view's rows and Deltas are the views layer's rule (engine/views/locality_view.h),
  // the GUI panel's: its sweep plus these (the Delta on screen), with this many histogram bins.
  std::vector<int64_t> locality_shown_deltas;
  int64_t locality_bins = 40;
  bool render_images = true;                   // PNG of masks, SVG of plots, under images/
  bool keep_inputs = true;                     // store the prompt's Q/K/V (GUI views recompute from them);
                                               // off for long prompts on big models (the 4 GiB limit)
  int threads = 0;                             // mask computations; results do not depend on it
};

// Takes the views of the analysis' kept layers: their masks from analysis.masks (the views layer
// computed them during the run) or, where the analysis holds inputs but no masks, from the views
// layer's CPU reference; traces and locality from the kept inputs; for the "cache" view, the
// offloading simulation with `offload_config` (required then; its access map is built). Throws
// InputError for unknown views or a trace outside the prompt or the kept layers.
Capture build_capture(PairedAnalysis analysis, CaptureInfo info, const CaptureRequest& request,
                      const offload::OffloadConfig* offload_config);

// The same from a comparison of methods (engine/analysis/method_runs.h, at least one run): runs[0]
// is the side every view is built from (its inputs, traces, locality, offloading); every run adds
// its side and its masks of the view layers (from its analysis' masks, or the CPU reference on its
// kept inputs). Throws InputError as above.
Capture build_capture(std::vector<MethodRun> runs, CaptureInfo info, const CaptureRequest& request,
                      const offload::OffloadConfig* offload_config);

// `c` showing method `name`'s side: that method's metrics and masks in `analysis` and `masks` and
// first in `methods` (exports and figures of that method read them there). Throws InputError
// naming the methods the capture holds when it holds no `name`.
Capture capture_of_method(Capture c, const std::string& name);

// The methods a capture's manifest lists, in order (format 1 and 2: params.selection), from a
// manifest read_capture_manifest returned (it validated the list).
std::vector<std::string> manifest_method_names(const nlohmann::json& manifest);
// Throws InputError "<what> holds no method 'NAME'; it holds hip, streaming" unless `name` is one of `held`.
void require_method_held(const std::vector<std::string>& held, const std::string& name, const std::string& what);

// The archive image, and the same bytes streamed to `path` entry by entry under the atomic-output
// rule (captures/atomic_file.h: an earlier file survives a failure; a device or FIFO is written in
// place); write_capture returns the bytes written.
std::string encode_capture(const Capture& capture);
uint64_t write_capture(const std::string& path, const Capture& capture);

struct CaptureReadOptions {
  // Read the prompt's Q/K/V (inputs/, most of a long capture's bytes). Without them the capture
  // reads as one written with --no-inputs: those entries are only checked to be present, and the
  // content hash, which covers their bytes, is not checked.
  bool inputs = true;
};

// Reads and validates everything (container, manifest, version, every array's CRC-32, dtype and
// shape against the manifest and the analysis' dimensions, the content hash). The file is
// memory-mapped: only the entries read are touched. Throws InputError naming the file and the
// damage, or the version a newer capture needs.
Capture read_capture(const std::string& path, const CaptureReadOptions& options = {});
Capture decode_capture(std::string_view bytes, const std::string& what, const CaptureReadOptions& options = {});

// The manifest alone (for file pickers and refusals before work): the container and the manifest
// validated as read_capture does, no array read.
nlohmann::json read_capture_manifest(const std::string& path);



// One array's .npy bytes as stored (`export --what array`): the container, the manifest and that
// entry checked (CRC-32, its dtype and shape against the manifest), no other array read. Throws
// InputError naming the array when the capture holds none of that name.
std::string read_capture_array(const std::string& path, const std::string& name);

// Current UTC time as ISO 8601.
std::string utc_now_iso8601();

}  // namespace hipstudio::captures
