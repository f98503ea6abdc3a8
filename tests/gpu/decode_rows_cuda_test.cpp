// A refreshed decode mask laid out for its cached steps in one launch (kernels/cuda/decode_rows.h
// through hip_torch::decode_rows, label gpu) against the layout written out on the host: each row
// the head's selected blocks, then the tail blocks from the refresh's tail start, then -1; and the
// counts of every step the mask serves.
#include <gtest/gtest.h>

#include <vector>

#include <ATen/ATen.h>

#include "kernels/torch/hip_torch.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

TEST(DecodeRowsCuda, RowsAndCountsEqualTheLayoutBuiltOnTheHost) {
  REQUIRE_CUDA_KERNELS();
  struct Case {
    int64_t heads, kb, tail_room, tail_start;
  };
  // The 8B decode shape (32 heads, k 512 / b_k 2, r_m 8), a row wider than the block's threads, no tail room.
  for (const Case& c : {Case{32, 256, 6, 65000}, Case{5, 300, 9, 400}, Case{3, 4, 0, 10}}) {
    at::manual_seed(c.heads * 1000 + c.kb);
    // Counts from 0 to kb (an empty and a full row among them), rows ascending, the rest -1.
    std::vector<int32_t> blocks(static_cast<size_t>(c.heads * c.kb), -1), counts(static_cast<size_t>(c.heads));
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t n = h == 0 ? 0 : h == 1 ? c.kb : at::randint(c.kb + 1, {1}).item<int64_t>();
      counts[static_cast<size_t>(h)] = static_cast<int32_t>(n);
      const at::Tensor picked = std::get<0>(at::randperm(c.tail_start, at::kInt).narrow(0, 0, n).sort());
      for (int64_t i = 0; i < n; ++i) blocks[static_cast<size_t>(h * c.kb + i)] = picked[i].item<int32_t>();
    }
    hip_torch::MaskTensors m;
    m.blocks = at::tensor(blocks, at::kInt).view({c.heads, 1, c.kb}).cuda();
    m.counts = at::tensor(counts, at::kInt).view({c.heads, 1}).cuda();
    const hip_torch::DecodeRows r = hip_torch::decode_rows(m, c.tail_start, c.tail_room);
    ASSERT_EQ(r.rows.sizes(), at::IntArrayRef({c.heads, 1, c.kb + c.tail_room}));
    ASSERT_EQ(r.counts_by_extra.sizes(), at::IntArrayRef({c.tail_room + 1, c.heads, 1}));
    const at::Tensor rows = r.rows.cpu(), by_extra = r.counts_by_extra.cpu();
    int64_t wrong = 0;
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t n = counts[static_cast<size_t>(h)];
      for (int64_t col = 0; col < c.kb + c.tail_room; ++col) {
        const int32_t want = col < n ? blocks[static_cast<size_t>(h * c.kb + col)]
                             : col < n + c.tail_room ? static_cast<int32_t>(c.tail_start + col - n)
                                                     : -1;
        wrong += rows[h][0][col].item<int32_t>() != want;
      }
      for (int64_t e = 0; e <= c.tail_room; ++e) wrong += by_extra[e][h][0].item<int32_t>() != n + e;
    }
    EXPECT_EQ(wrong, 0) << "heads " << c.heads << " kb " << c.kb << " tail_room " << c.tail_room;
    // A cached step's counts are a contiguous view the attention binding takes as they are.
    EXPECT_TRUE(r.counts_by_extra.select(0, c.tail_room).is_contiguous());
  }
}

TEST(DecodeRowsCuda, BadMasksAreRefused) {
  REQUIRE_CUDA_KERNELS();
  hip_torch::MaskTensors m;
  m.blocks = at::zeros({4, 2, 8}, at::TensorOptions().dtype(at::kInt).device(at::kCUDA));  // two query blocks
  m.counts = at::zeros({4, 2}, m.blocks.options());
  EXPECT_THROW(hip_torch::decode_rows(m, 0, 3), std::invalid_argument);
  m.blocks = at::zeros({4, 1, 8}, m.blocks.options());
  m.counts = at::zeros({4, 1}, m.blocks.options().dtype(at::kLong));
  EXPECT_THROW(hip_torch::decode_rows(m, 0, 3), std::invalid_argument);
}

}  // namespace
}  // namespace hipstudio
