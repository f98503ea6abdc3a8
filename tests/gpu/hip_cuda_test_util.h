#pragma once
// Shared helpers of the CUDA HiP kernel tests (label gpu): skip rules, fresh random inputs of three
// kinds, tensor conversions and error norms.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"
#include "kernels/torch/hip_torch.h"

namespace hipstudio::testing_gpu {

// Skips unless the CUDA kernels were built, a GPU is usable and this LibTorch has CUDA.
#define HIP_CUDA_REQUIRE()                                                                                   \
  do {                                                                                                       \
    const std::string why_ = ::hipstudio::hip_torch::cuda_kernels_status();                                  \
    if (!why_.empty()) GTEST_SKIP() << "HiP CUDA kernels not testable here: " << why_;                       \
    if (!at::hasCUDA()) GTEST_SKIP() << "this LibTorch has no CUDA support: run the gpu tests on a GPU build"; \
  } while (0)

enum class Kind { kRandom, kLocality, kTies };
inline const char* kind_name(Kind k) { return k == Kind::kRandom ? "random" : k == Kind::kLocality ? "locality" : "ties"; }

// Fresh seed per run (printed so a failure can be replayed).
inline uint64_t fresh_seed() {
  static const uint64_t base = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ (static_cast<uint64_t>(::getpid()) << 32);  // not std::random_device: it crashes beside PyTorch's LibTorch
  static uint64_t n = 0;
  return base + 7919 * n++;
}

struct HostInputs {
  int64_t hq, hkv, tq, tk, d;
  std::vector<float> q, k, v;
  std::vector<int64_t> positions;  // empty: implicit
  hip::AttentionInputs view() const {
    hip::AttentionInputs in;
    in.q = q.data(), in.k = k.data(), in.v = v.data();
    in.positions = positions.empty() ? nullptr : positions.data();
    in.hq = hq, in.hkv = hkv, in.tq = tq, in.tk = tk, in.d = d;
    return in;
  }
};

// random: N(0, 1). locality: rotary-like features of the position plus noise, so that a query
// scores its neighbourhood highest (the structure real attention has). ties: values in {-1, 0, 1}
// so that many scores tie exactly (tests the tie-breaking).
inline HostInputs make_inputs(Kind kind, int64_t hq, int64_t hkv, int64_t tq, int64_t tk, int64_t d, uint64_t seed,
                              bool explicit_positions = false) {
  HostInputs h{hq, hkv, tq, tk, d, {}, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_int_distribution<int> tri(-1, 1);
  if (explicit_positions) {  // increasing, random gaps, inside [0, tk)
    std::vector<int64_t> all(static_cast<size_t>(tk));
    for (int64_t i = 0; i < tk; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    h.positions.assign(all.begin(), all.begin() + tq);
    std::sort(h.positions.begin(), h.positions.end());
  }
  auto pos_of_query = [&](int64_t i) { return h.positions.empty() ? tk - tq + i : h.positions[i]; };
  auto fill = [&](std::vector<float>& x, int64_t heads, int64_t t, bool is_q) {
    x.resize(static_cast<size_t>(heads * t * d));
    for (int64_t hh = 0; hh < heads; ++hh)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t c = 0; c < d; ++c) {
          float val;
          if (kind == Kind::kRandom) {
            val = nd(rng);
          } else if (kind == Kind::kTies) {
            val = static_cast<float>(tri(rng));
          } else {
            const double pos = is_q ? static_cast<double>(pos_of_query(i)) : static_cast<double>(i);
            const double w = std::pow(10000.0, -2.0 * static_cast<double>(c / 2) / static_cast<double>(d)) * 4.0;
            val = static_cast<float>((c % 2 ? std::sin(pos * w) : std::cos(pos * w)) * 1.5 + 0.5 * nd(rng));
          }
          x[(hh * t + i) * d + c] = val;
        }
  };
  fill(h.q, hq, tq, true);
  fill(h.k, hkv, tk, false);
  fill(h.v, hkv, tk, false);
  if (kind == Kind::kLocality)
    for (float& x : h.v) x = nd(rng);
  return h;
}

inline at::Tensor to_device(const std::vector<float>& x, std::vector<int64_t> shape, at::ScalarType st) {
  at::Tensor t = at::from_blob(const_cast<float*>(x.data()), shape, at::kFloat).clone();
  return t.to(at::Device(at::kCUDA, 0)).to(st).contiguous();
}

// Rounds the host copy to bf16/f16 so that the float64 reference sees exactly the GPU's inputs.
inline void round_to(std::vector<float>& x, at::ScalarType st) {
  if (st == at::kFloat) return;
  at::Tensor t = at::from_blob(x.data(), {static_cast<int64_t>(x.size())}, at::kFloat);
  t.copy_(t.to(st).to(at::kFloat));
}

inline at::Tensor positions_tensor(const HostInputs& h) {
  if (h.positions.empty()) return at::Tensor();
  return at::from_blob(const_cast<int64_t*>(h.positions.data()), {h.tq}, at::kLong).clone().to(at::Device(at::kCUDA, 0));
}

inline hip_torch::MaskTensors mask_tensors_of(const hip::MaskResult& m) {
  hip_torch::MaskTensors t;
  t.blocks = at::from_blob(const_cast<int32_t*>(m.blocks.data()), {m.heads, m.query_blocks, m.kb}, at::kInt)
                 .clone()
                 .to(at::Device(at::kCUDA, 0));
  t.counts = at::from_blob(const_cast<int32_t*>(m.counts.data()), {m.heads, m.query_blocks}, at::kInt)
                 .clone()
                 .to(at::Device(at::kCUDA, 0));
  return t;
}

// ||a - ref|| / ||ref|| with ref in float64.
inline double rel_l2(const at::Tensor& gpu_out, const std::vector<double>& ref) {
  const at::Tensor a = gpu_out.to(at::kCPU).to(at::kDouble).contiguous().reshape({-1});
  const double* p = a.data_ptr<double>();
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = p[i] - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

}  // namespace hipstudio::testing_gpu
