#pragma once
// What the UI wants computed: built from the UI state every frame and handed to the worker, which
// re-runs only the stages whose inputs changed (each stage's key covers exactly its inputs).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/analysis/hip_model_params.h"
#include "kernels/hip_param_fields.h"

namespace hipstudio::gui {

struct AnalysisView;

struct ModelRequest {
  std::string path;            // empty: the default model
  std::string device = "cpu";
  std::string dtype = "f32";
  int64_t synthetic_tokens = 0;  // > 0: no model, random Q/K of this many tokens (frame stats)
  uint64_t reload = 0;           // bumped by the Load button: retry / reload the same path
  // An open capture (read-only) replaces the model and the paired run: `capture` ("path#id") is in
  // every stage key, `capture_view` is the analysis the worker publishes instead of running one.
  std::string capture;
  std::shared_ptr<const AnalysisView> capture_view;
};

struct Request {
  ModelRequest model;
  std::string prompt;
  HipModelParams hip;
  int64_t decode_steps = 16;
  uint64_t seed = 1;
  int64_t layer = 0, head = 0, query_block = 0;
  int64_t delta = 8;   // locality histogram Delta
  int64_t bins = 40;
  double cache_factor = 2.0;
  uint64_t generate_id = 0;      // bumped by the Generate button; 0: nothing asked
  int64_t generate_tokens = 48;
  bool want_dense = true;        // dense probability image (side by side) is needed
  // The Latency panel's timing: 0 times the viewed layer's own inputs; > 0 random inputs of the
  // model's attention shapes at this length (the "what if" readout).
  int64_t latency_tokens = 0;
  // The Sweep panel's run (engine/analysis/sweep.h) of the current settings: bumped by its Run
  // button (0: nothing asked); the field it varies and the values, checked by the panel.
  uint64_t sweep_id = 0;
  hip::HipField sweep_field = hip::HipField::kK;
  std::vector<int64_t> sweep_values;
  int64_t sweep_views_layer = -1;  // SweepSpec::views_layer: the layer whose quality it measures, -1 every HiP layer
  // The Methods panel's comparison (engine/analysis/method_comparison.h) at the current settings:
  // bumped by its Run button (0: nothing asked); the methods with their resolved values.
  uint64_t methods_id = 0;
  std::vector<hip::methods::MethodChoice> methods;
  // The methods whose masks of the viewed layer the Side by side panel draws (its two pickers and
  // its small multiples), in the registry's order, each once: the method masks stage computes them.
  std::vector<hip::methods::MethodChoice> compare_methods;
};

// Decode steps the GUI's analysis leaves room for in its KV caches (the decode slider's maximum),
// so that a change of the slider re-runs only the decode steps.
inline constexpr int64_t kGuiDecodeRoom = 64;

// One key per stage: equal keys mean the stage's result is still valid.
std::string stage_key(int stage, const Request& r);
// Whether the viewed layer's attention inputs depend on the HiP settings: only above the first HiP
// layer (layers 0 .. l_d - 1 are dense, so layer l_d and those below it read dense layers' output).
// The views that read nothing but those inputs (dense probabilities, locality) keep their results
// across a HiP change where they do not.
inline bool layer_inputs_follow_hip(const Request& r) { return r.layer > r.hip.dense_layers; }
// What the dense prefill reads (model, prompt, decode room): a request that keeps it and changes
// only what the HiP side reads re-runs the HiP prefill alone.
std::string dense_prefill_key(const Request& r);

// The decode room a request's prefill plans: the slider's range, or more steps typed past it
// (Ctrl+click), which then key a new prefill with that room.
inline int64_t decode_room(const Request& r) { return r.decode_steps > kGuiDecodeRoom ? r.decode_steps : kGuiDecodeRoom; }

}  // namespace hipstudio::gui
