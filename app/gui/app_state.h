#pragma once
// UI state: what the user chose and where they look. Separate from results (results.h), which
// only the worker writes. Panels edit this; the main loop turns it into a Request every frame.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/request.h"
#include "kernels/hip_param_fields.h"

namespace hipstudio::gui {

struct OpenCapture;  // capture_view.h
struct CompareCapture;  // capture_view.h
struct FileTask;     // save_export.cpp: a save or export running in the background

// A query block the user stepped through in the Iterations panel; File > Save capture stores its trace.
struct SteppedBlock {
  int64_t layer = 0, head = 0, query_block = 0;
  bool operator==(const SteppedBlock& o) const { return layer == o.layer && head == o.head && query_block == o.query_block; }
};

// The HiP knobs as the sliders hold them (ints for ImGui); validated before they reach a Request.
// The sliders' defaults: the field table's gui_default (kernels/hip_param_fields.cpp).
inline double knob_default(hip::HipField f) { return hip::hip_param_field(f).gui_default; }

struct HipKnobs {
  using F = hip::HipField;
  int k = static_cast<int>(knob_default(F::kK)), b_q = static_cast<int>(knob_default(F::kBq)),
      b_k = static_cast<int>(knob_default(F::kBk)), b_sq = static_cast<int>(knob_default(F::kBsq)),
      b_sk = static_cast<int>(knob_default(F::kBsk)), sink = static_cast<int>(knob_default(F::kSink)),
      window = static_cast<int>(knob_default(F::kWindow)), l_d = static_cast<int>(knob_default(F::kDenseLayers)),
      r_m = static_cast<int>(knob_default(F::kRefreshEvery));
  float rho = static_cast<float>(knob_default(F::kRho));                  // representative position
  float cache_factor = static_cast<float>(knob_default(F::kCacheFactor)); // c
  int decode_steps = static_cast<int>(knob_default(F::kDecodeSteps));
};

// Zoom and pan of the mask view, in cells (tokens): the visible rect's top-left and cells per axis.
struct MaskViewState {
  double x0 = 0, y0 = 0;      // first visible key / query
  double span = 0;            // visible cells along each axis; 0: fit the whole prompt
  bool show_oracle = true, show_random = false, show_sink_dense = true;
  bool show_hip_on_dense = false;  // a dense layer (l < l_d): draw what HiP would pick instead
  bool zoomed = false;        // the user zoomed or panned since the view was last fitted
  int64_t tokens = 0;         // the T the view was last laid out for (0: none yet)

  // A result of `T` tokens is about to be drawn: a new T refits the view (a longer prompt must not
  // be cut to the old one's axes), unless the user zoomed since and the zoomed range still lies
  // inside the new T, which keeps what they were looking at.
  void follow_tokens(int64_t T);
  void fit() { span = 0, x0 = y0 = 0, zoomed = false; }
  void zoom(double factor) { span *= factor, zoomed = true; }
};

// File > Export view...'s choices.
struct ExportOptions {
  std::string dir;        // created if missing
  int64_t px = 1024;      // figure PNG: longest side, exactly
  bool tiles = false;     // mask at full detail, in PNG tiles of `tile` pixels, into dir/mask_L<l>_H<h>_tiles/
  int64_t tile = 4096;
  bool dark_style = false;  // figures' colours: paper (light, whatever the UI theme) or dark
};

// What the File menu's modal dialogs hold while open (transient: never saved).
struct DialogState {
  std::string open_path, open_error;
  std::string save_path, save_error;
  ExportOptions export_options;
  std::string export_error;
};

inline constexpr size_t kMaxSteppedBlocks = 64;

// The UI state in three parts (Tracy's ViewData apart from the view): what is saved between
// sessions, where the user looks, and what lives only while the app runs. AppState joins them so
// panels keep one reference; settings.cpp reads and writes only PersistedSettings.

// Saved in settings.json: the inputs, the knobs and the presentation a user expects to find again.
struct PersistedSettings {
  std::string model_path;  // empty: default model
  std::string device = "cpu", dtype = "f32";
  std::string prompt;
  std::vector<std::string> recent_models, recent_prompts;
  std::vector<std::string> recent_folders;  // the file browser's (file_browser_model.h)
  HipKnobs knobs;          // the sliders (saved as the last valid ones)
  bool dark = true;
  bool classic_mask_colors = false;  // the earlier yellow / orange / pink outcomes, not Okabe-Ito
  float ui_scale = 1.0f;
  float sidebar_width = 360.0f;
  float pane_split = 0.55f;  // share of the right area given to the left pane

  void add_recent_model(const std::string& path);
  void add_recent_prompt(const std::string& path);
};

// The Side by side pickers' entry for the dense probabilities (every other entry is a registry name).
inline constexpr const char* kCompareDense = "dense";

// The current selection: which layer / head / query block / token / Delta every view shows, the
// mask view's zoom and the players' positions.
struct Selection {
  int layer = 1, head = 0;
  int query_block = 1 << 20;  // clamped to the last block (the one that sees the most keys)
  int delta = 8, bins = 40;
  int query_token = -1;    // token view: the query whose attention is shown; -1: the last prompt token
  MaskViewState mask_view;
  int step = 0;            // iteration stepper: 0 = initial nodes
  std::vector<SteppedBlock> stepped_blocks;  // in the order first stepped (at most kMaxSteppedBlocks)
  bool playing = false;
  // Set by a panel that left part of its picture for a later frame: the next frame comes at once.
  bool redraw_soon = false;
  double play_accum = 0;
  float play_rate = 2.0f;  // steps per second
  int kv_step = 0;         // KV cache scrubber
  int kv_context = 0;      // 0 mask, 1 sparse
  uint64_t generate_id = 0;
  int generate_tokens = 48;
  int64_t latency_tokens = 0;  // Latency panel: 0 the viewed layer, else a "what if" length
  // Sweep panel: the run asked for (bumped by Run; 0: none), the field and its checked values.
  uint64_t sweep_id = 0;
  hip::HipField sweep_field = hip::HipField::kK;
  std::vector<int64_t> sweep_values;
  int64_t sweep_views_layer = -1;  // the layer it measures (the viewed one when Run was pressed), -1 every HiP layer
  bool sweep_every_layer = false;  // the panel's "every layer" box: quality means over every HiP layer (slower)
  // Methods panel: the comparison asked for (bumped by Run; 0: none) and its checked methods.
  uint64_t methods_id = 0;
  std::vector<hip::methods::MethodChoice> methods;
  // Side by side: what each of the two linked views shows (kCompareDense or a registry method's
  // name), and the registry methods drawn as small multiples of the viewed head.
  std::string compare_left = kCompareDense, compare_right = "hip";
  std::vector<std::string> compare_multiples;

  // Called when the user steps past the initial nodes of a block; repeats are ignored.
  void record_stepped_block(const SteppedBlock& b);
};

// Transient: verdicts on the knobs, the open capture, dialogs, background file tasks, messages.
struct TransientUi {
  uint64_t model_reload = 0;  // the Load button bumps it (retry after fixing a missing file)
  std::string prompt_path;
  int64_t synthetic_tokens = 0;  // frame-stats mode
  std::string invalid;     // the broken rule, when the knobs are invalid (no run starts)
  HipKnobs applied;        // last valid knobs (what the results show)
  // A capture shown instead of a live run (File > Open capture, a dropped .hipcap, `hipstudio open`):
  // read-only, its parameters replace the knobs in the request until File > Close capture.
  std::shared_ptr<const OpenCapture> capture;
  // Capture B beside what is on screen (the Compare captures panel; `hipstudio open A --compare B`).
  std::shared_ptr<const CompareCapture> compare;
  bool show_open_capture = false;  // File > Open capture... opens the path modal on the next frame
  bool show_save_capture = false;  // File > Save capture... (path modal)
  bool show_export_view = false;   // File > Export view... (folder and resolution modal)
  bool show_reset_confirm = false; // View > Reset layout and settings... (asks first)
  DialogState dialogs;
  std::shared_ptr<FileTask> file_task;  // the save / export running now, or null
  std::vector<std::string> last_exported;  // files of the last export
  std::string preview_path;  // an exported mask figure shown in the "Exported figure" window
  bool show_help = false;
  std::string focus_panel;    // a panel id to bring to front on the next frame
  bool cancel_requested = false;  // the main loop forwards it to the worker (Esc does it directly)
  std::string status_message;
  double status_until = 0;
};

struct AppState : PersistedSettings, Selection, TransientUi {};


// The kernel parameters of the knobs (validation and requests both start from these).
hip::HipParams to_hip_params(const HipKnobs& k);

// The knob of a field-table field (kernels/hip_param_fields.h): an int knob, or for rho and c the
// float one; nullptr from the other accessor.
int* knob_count(HipKnobs& k, hip::HipField f);
float* knob_real(HipKnobs& k, hip::HipField f);

// The first broken rule of the knobs (HiP's rules plus l_d, r_m, decode steps, c): its message and the
// fields it names, which the sidebar frames red; an empty message when every rule holds.
struct KnobBreak {
  std::string message;
  hip::HipField field = hip::HipField::kNone;
  hip::HipField other = hip::HipField::kNone;  // a rule between two fields ("k ... multiple of b_k")
  // Whether the broken rule names field `f` (its slider is framed red).
  bool names(hip::HipField f) const { return !message.empty() && (field == f || other == f); }
};
KnobBreak knob_break(const HipKnobs& k, int64_t full_attention_layers);
// knob_break's message.
std::string validate_knobs(const HipKnobs& k, int64_t full_attention_layers);

// The request the worker should serve for this state (uses `applied`, the last valid knobs).
Request make_request(const AppState& s);

// Request::compare_methods of the state: the pickers' and the small multiples' methods in the
// registry's order, each with the values the Methods panel's last comparison gave it, else its
// defaults, resolved at the applied knobs (values the knobs refuse stay unresolved: the worker
// says why for that method alone).
std::vector<hip::methods::MethodChoice> compare_choices(const AppState& s);

// The Sweep panel's Run: asks the worker for a sweep of `field` over `values` (checked by the
// caller), measuring the viewed layer alone unless the panel's "every layer" box is checked; returns
// the new sweep id.
uint64_t ask_sweep(AppState& s, hip::HipField field, std::vector<int64_t> values);

}  // namespace hipstudio::gui
