#pragma once
// The fake engine jobs' shape (fake_engine_jobs.cpp), for the worker tests' references.
#include <cstdint>
#include <memory>
#include <string>

#include "app/gui/request.h"
#include "app/gui/results.h"

namespace hipstudio::gui {

inline constexpr int kFakeAnalysisChecks = 40;    // progress checks per fake prefill
inline constexpr int kFakeDecodeChecks = 10;      // progress checks per fake decode
inline constexpr int kFakeCheckMicros = 500;      // sleep between two checks (and two generated tokens)
inline constexpr int64_t kFakeTokens = 256;       // synthetic prompt length
// A request whose prompt starts with kFakeLayeredPrompt runs a layered fake: kFakeLayers layers, and
// a prefill that stops after the viewed layer (the engine's viewed layer first), leaving the layers
// above to finish_hip_job, which takes kFakeRestChecks progress checks.
inline constexpr const char* kFakeLayeredPrompt = "layered";
inline constexpr int64_t kFakeLayers = 4;
inline constexpr int kFakeRestChecks = 200;

// Fake prefills started so far (by any worker of the process).
int64_t fake_prefill_runs();
// Fake finish_hip_job runs started, and those that completed, so far.
int64_t fake_rest_runs();
int64_t fake_rest_completed();

// Fake method_mask_job calls so far (each computes one method's mask of one layer).
int64_t fake_method_mask_runs();

// What a completed fake analysis of `r` publishes (synthetic Q/K of r.seed, r's parameters).
std::shared_ptr<const AnalysisView> fake_analysis(const Request& r);
// The layered fake's prompt results of `r` (kFakeLayeredPrompt): every layer's inputs (each layer's
// synthetic Q/K of its own seed) through `through_layer` (-1: all, the whole results).
std::shared_ptr<const AnalysisView> fake_layered_analysis(const Request& r, int64_t through_layer = -1);
// The text piece token `token` of side 0 (dense) or 1 (HiP) appends.
std::string fake_piece(int side, int64_t token);

}  // namespace hipstudio::gui
