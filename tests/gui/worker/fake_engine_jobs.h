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

// Fake prefills started so far (by any worker of the process).
int64_t fake_prefill_runs();

// What a completed fake analysis of `r` publishes (synthetic Q/K of r.seed, r's parameters).
std::shared_ptr<const AnalysisView> fake_analysis(const Request& r);
// The text piece token `token` of side 0 (dense) or 1 (HiP) appends.
std::string fake_piece(int side, int64_t token);

}  // namespace hipstudio::gui
