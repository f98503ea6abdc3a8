#pragma once
// What `analyze --methods` prints: one row per method (the dense side first) with its perplexity,
// KL(dense || method), top-1 agreement, the means over the sparse layers' heads of recall, attention
// mass and output error against the oracle, its decode refreshes and its prefill latency.
#include <cstdio>
#include <vector>

#include "app/method_options.h"
#include "engine/analysis/method_runs.h"

namespace hipstudio::app {

// The resolved methods of --methods for a run with `options` (random's seed: options.random_seed);
// InputError naming a value that breaks a method's rule, before any work.
std::vector<hip::methods::MethodChoice> method_choices(const MethodOptions& methods, const AnalysisOptions& options);

void print_method_table(std::FILE* out, const std::vector<MethodRun>& runs);

}  // namespace hipstudio::app
