// BatchDecoder on the CPU (no CUDA graphs here): every step is decode_batch's eager one, bit for
// bit, and none is counted as graphed; its batch step parts (batch_step_parts.h) in the layout the
// batched attention call reads.
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/backends/hip_attention.h"
#include "engine/generation/batch_decoder.h"
#include "engine/generation/batch_step_parts.h"
#include "tests/engine/batch_decode_check.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio {
namespace {

using testing::default_model;

TEST(BatchDecoder, OnTheCpuEveryStepIsTheEagerOne) {
  const auto model = default_model();
  const auto prompts = testing::three_prompts(*model);
  const HipModelParams params = testing::small_hip_params();
  std::vector<int64_t> capacities;
  for (const auto& p : prompts) capacities.push_back(static_cast<int64_t>(p.size()) + 4);
  auto run = [&](bool decoder) {
    Transformer transformer(model, 200);
    BatchKVStorage storage(model->config, model->run, capacities);
    std::vector<std::unique_ptr<HipAttention>> hips;
    std::vector<BatchSequence> batch;
    for (size_t i = 0; i < prompts.size(); ++i) {
      hips.push_back(std::make_unique<HipAttention>(params, model->config.n_layers));
      KVCache& cache = storage.slot(static_cast<int64_t>(i));
      transformer.forward(prompts[i], cache, *hips.back());
      batch.push_back({&cache, hips.back().get()});
    }
    BatchDecoder batch_decoder(transformer, &storage);
    batch_decoder.prepare(batch);
    std::vector<at::Tensor> out;
    for (int32_t s = 0; s < 4; ++s) {
      const std::vector<int32_t> tokens{s + 3, s + 5, s + 7};
      out.push_back(decoder ? batch_decoder.step(tokens, batch) : decode_batch(transformer, tokens, batch, {}, &storage));
      EXPECT_EQ(batch_decoder.last_step(), GraphedStep::kNone);
    }
    EXPECT_EQ(batch_decoder.graphed_steps(), 0);
    return at::stack(out);
  };
  EXPECT_TRUE(run(true).equal(run(false)));
}

TEST(BatchStepParts, CallIntsHoldCountsStartsAndOffsets) {
  BatchSlots slots;
  slots.positions = {9, 3};
  slots.starts = {0, 12};
  slots.capacities = {12, 5};
  EXPECT_EQ(batch_call_ints(slots), (std::vector<int32_t>{10, 4, 0, 12, 0, 1, 2, 0, 12, 17}));
  EXPECT_EQ(batch_call_ints_size(2), 10);
  EXPECT_EQ(batch_write_rows(slots), (std::vector<int64_t>{9, 15}));
  BatchAttentionCall call;
  set_batch_call_ints(call, at::arange(10, at::kInt), 2);
  EXPECT_EQ(call.key_counts[1].item<int>(), 1);
  EXPECT_EQ(call.key_starts[0].item<int>(), 2);
  EXPECT_EQ(call.query_offsets.size(0), 3);
  EXPECT_EQ(call.key_offsets[2].item<int>(), 9);
}

}  // namespace
}  // namespace hipstudio
