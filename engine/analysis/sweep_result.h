#pragma once
// What a parameter sweep (engine/analysis/sweep.h) produces, as plain data with no LibTorch: the GUI's
// panels and the exporters (app/common/sweep_outputs.h) read it.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/hip_param_fields.h"

namespace hipstudio {

// The fields a sweep may vary, in the order the CLI's help and the GUI's picker list them.
constexpr std::array<hip::HipField, 5> kSweepFields = {hip::HipField::kK, hip::HipField::kBk, hip::HipField::kBq,
                                                      hip::HipField::kDenseLayers, hip::HipField::kRefreshEvery};

// Whether a sweep may vary `field`.
inline bool sweep_field_allowed(hip::HipField field) {
  for (hip::HipField f : kSweepFields)
    if (f == field) return true;
  return false;
}
// The field of a name as hip_field_name spells it ("k", "b_k", "b_q", "l_d", "r_m"); kNone otherwise.
inline hip::HipField sweep_field_by_name(const std::string& name) {
  for (hip::HipField f : kSweepFields)
    if (name == hip::hip_field_name(f)) return f;
  return hip::HipField::kNone;
}

struct SweepSpec {
  hip::HipField field = hip::HipField::kNone;
  std::vector<int64_t> values;  // in the order given; each must make valid HiP parameters
  // -1: recall, mass and output error are means over every HiP layer's heads. L >= 0: over layer
  // L's heads alone, and no other layer's views are computed (the views are most of a sweep point's
  // time: ~0.2 s a layer of an 8B model at 32k tokens on an H200). KL and latency are the whole
  // model's either way. The GUI's sweep panel defaults to its viewed layer.
  int64_t views_layer = -1;
};

// One value's numbers for one selection method. Rows are keyed by the method's registry name so that
// other selection methods can add their rows to the same table.
struct SweepRow {
  std::string method = "hip";
  int64_t value = 0;
  // HeadQuality::recall, mean over the HiP layers' heads (mean_over_hip_layers, hip_layer_means.h),
  // or over SweepResult::views_layer's heads; NaN where that layer runs dense at this value
  double recall = 0;
  double mass = 0;         // HeadQuality::mass, the same mean
  double out_rel_err = 0;  // HeadQuality::out_rel_err, the same mean
  double kl = 0;           // PairedAnalysis::kl: KL(dense || HiP), mean over prompt positions
  double latency_ms = 0;   // HiP's prefill on a CUDA device; NaN where the run is the CPU's float64 reference
  int64_t mask_refreshes = 0;  // decode steps that re-estimated the masks (what r_m changes)
};

struct SweepResult {
  hip::HipField field = hip::HipField::kNone;
  bool timed = false;        // latency_ms measured (a CUDA run)
  int64_t prompt_tokens = 0; // T, with BOS
  int64_t views_layer = -1;  // SweepSpec::views_layer: -1 every HiP layer, else the one layer measured
  std::vector<SweepRow> rows;  // (values x methods), in the spec's order
};

}  // namespace hipstudio
