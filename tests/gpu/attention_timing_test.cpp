// The Latency panel's device timing (engine/backends/attention_timing.h), label gpu: every part is a
// median of the repeats asked for, positive and finite, with a spread that is a spread; a dense
// backend ran; HiP's sparse attention, reading a sixteenth of the keys at 8k, beats the dense
// kernel; a cancel between repeats stops it; off CUDA it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <ATen/ATen.h>

#include "engine/formats/errors.h"
#include "engine/backends/attention_timing.h"
#include "engine/runtime/run_cancelled.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

hip::HipParams paper_params() {
  hip::HipParams p;
  p.k = 512, p.b_q = 64, p.b_sq = 2, p.b_k = 2, p.b_sk = 1;
  return p;
}

TEST(AttentionTiming, CpuTensorsAreRefused) {
  const at::Tensor q = at::randn({4, 64, 16}), k = at::randn({2, 64, 16});
  EXPECT_THROW(time_attention(q, k, k, paper_params(), {}), InputError);
}

TEST(AttentionTimingCuda, MediansOfInterleavedRepeatsAt8k) {
  REQUIRE_CUDA_KERNELS();
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const int64_t T = 8192;
  const at::Tensor q = at::randn({32, T, 128}, opts), k = at::randn({8, T, 128}, opts), v = at::randn({8, T, 128}, opts);
  TimingOptions o;
  o.repeats = 5;
  int asked = 0;
  o.keep_going = [&] { return ++asked > 0; };
  const AttentionTiming t = time_attention(q, k, v, paper_params(), o);
  std::printf("[gpu] 8k layer: prefill HiP %.3f ms (mask %.3f +- %.3f, sparse %.3f +- %.3f) vs dense %.3f +- %.3f (%s); "
              "decode refresh %.4f, cached %.4f vs dense %.4f ms (%s)\n",
              t.prefill_hip(), t.prefill_mask.median, t.prefill_mask.spread, t.prefill_sparse.median, t.prefill_sparse.spread,
              t.prefill_dense.median, t.prefill_dense.spread, t.dense_prefill_backend.c_str(), t.refresh_step(),
              t.cached_step(), t.decode_dense.median, t.dense_decode_backend.c_str());
  EXPECT_GE(asked, 5) << "keep_going is asked once a repeat (and between the backend trials)";
  EXPECT_EQ(t.tokens, T);
  for (const TimedMs* m : {&t.prefill_mask, &t.prefill_sparse, &t.prefill_dense, &t.decode_mask, &t.decode_sparse, &t.decode_dense}) {
    EXPECT_EQ(m->repeats, 5);
    EXPECT_TRUE(std::isfinite(m->median) && m->median > 0) << m->median;
    EXPECT_TRUE(m->spread >= 0 && m->spread <= m->median) << m->spread;
  }
  EXPECT_NE(t.dense_prefill_backend, "none");
  EXPECT_NE(t.dense_decode_backend, "none");
  // Attention over k = 512 of 8192 keys reads a sixteenth of dense's: slower than dense would mean
  // the timing measured something else.
  EXPECT_LT(t.prefill_sparse.median, t.prefill_dense.median);
  // A second timing of the same shapes (the next knob change) reuses the backend choice and still
  // times the dense side.
  asked = 0;
  const AttentionTiming again = time_attention(q, k, v, paper_params(), o);
  EXPECT_EQ(asked, 5) << "the backend choice is reused: keep_going is asked once a repeat only";
  EXPECT_EQ(again.dense_prefill_backend, t.dense_prefill_backend);
  EXPECT_EQ(again.dense_decode_backend, t.dense_decode_backend);
  EXPECT_EQ(again.prefill_dense.repeats, 5);
  int calls = 0;
  o.keep_going = [&] { return ++calls < 2; };
  EXPECT_THROW(time_attention(q, k, v, paper_params(), o), RunCancelled);
}

}  // namespace
}  // namespace hipstudio
