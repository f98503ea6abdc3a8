#pragma once
// The field table's HiP parameters (kernels/hip_param_fields.h) as an analysis holds them: what the
// analysis JSON and the capture manifest write under their "params" keys and the reader sets.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "engine/analysis/paired_result.h"
#include "kernels/hip_param_fields.h"

namespace hipstudio::captures {

// The integer field `f` of `o` (the kernel's sizes, l_d, r_m, decode steps); nullptr for rho and c.
inline int64_t* params_count(AnalysisOptions& o, hip::HipField f) {
  switch (f) {
    case hip::HipField::kDenseLayers: return &o.hip.dense_layers;
    case hip::HipField::kRefreshEvery: return &o.hip.refresh_every;
    case hip::HipField::kDecodeSteps: return &o.decode_steps;
    default: return hip::hip_size_field(o.hip.hip, f);
  }
}

// `f`'s value in `o` as JSON: an int64 count, or rho as a double. c is not held in AnalysisOptions
// (null): neither file's "params" has a key for it.
inline nlohmann::json params_value(const AnalysisOptions& o, hip::HipField f) {
  if (f == hip::HipField::kRho) return o.hip.hip.rho;
  AnalysisOptions copy = o;
  const int64_t* v = params_count(copy, f);
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace hipstudio::captures
