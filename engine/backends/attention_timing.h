#pragma once
// Times one attention layer on CUDA for the GUI's Latency panel: HiP's mask estimation and sparse
// attention (the kernels the model runs) against the fastest of LibTorch's dense SDPA backends
// (flash, cuDNN, memory-efficient) for the same shapes, prefill and a decode step at the last
// position. Each part is a median of `repeats` CUDA-event timings after `warmup` calls; every repeat
// runs both sides, HiP first on even repeats and dense first on odd ones, so neither always runs
// first. Inputs: a kept layer's tensors, or random ones of the model's shapes at any length (the
// "what if" readout).
#include <functional>
#include <optional>

#include <ATen/core/Tensor.h>

#include "engine/analysis/attention_timing_result.h"
#include "engine/analysis/paired_result.h"
#include "engine/model/model.h"
#include "kernels/hip_params.h"

namespace hipstudio {

struct TimingOptions {
  int repeats = 7;
  // One warm-up round: the masks' first estimate and the dense backend's pick (its trials) have
  // already run every kernel once before it; a second round cost a knob change ~40 ms at 32k.
  int warmup = 1;
  std::function<bool()> keep_going;  // asked between repeats; false throws RunCancelled
};

// q (hq, T, d), k and v (hkv, T, d) on a CUDA device. Throws InputError off CUDA or without the kernels.
AttentionTiming time_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const hip::HipParams& p,
                               const TimingOptions& options);

// A kept layer's own tensors; empty where they live on the host (a CPU run: no speed measurement).
std::optional<AttentionTiming> time_layer_attention(const LayerInputs& inputs, const hip::HipParams& p,
                                                    const TimingOptions& options);

// Random inputs of the model's attention shapes at `tokens` on its device and dtype; empty off CUDA.
std::optional<AttentionTiming> time_attention_at_length(const Model& model, int64_t tokens, const hip::HipParams& p,
                                                        const TimingOptions& options);

}  // namespace hipstudio
