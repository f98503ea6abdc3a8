// A refreshed decode mask laid out for its cached steps in one launch (kernels/cuda/decode_rows.h
// through hip_torch::decode_rows, label gpu) against the layout written out on the host: each row
// the head's selected blocks, then the tail blocks from the refresh's tail start, then -1; and the
// counts of every step the mask serves. And the search that writes that layout itself, reading the
// query's position on the device (a decode graph's refresh), against the search and the layout
// launched apart with the position from the host.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include <ATen/ATen.h>

#include "kernels/search_range.h"
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

// The graph's refresh (hip_torch::refresh_decode_rows_on_stream) searches keys [0, position] of
// the whole cache, the position read on the device, and lays out its rows with the tail from
// search_hi(position): it must give exactly what estimate_masks over the cache's first position + 1
// keys and decode_rows with the host's tail start give. The keys past the position are large, so a
// search that read them would pick other blocks. Cases: searched ranges (the 8B shape's 32 heads,
// d 128; 8 heads, d 64), a range within the budget (no search), the cache's last slot; plain and
// dependent launches (the latter after a LibTorch kernel, which never lets it start early: that the
// search waits for a RoPE kernel that does is CudaEngine.GraphRefreshStepsMatchEagerSteps' part).
TEST(DecodeRowsCuda, GraphRefreshRowsEqualTheSearchAndLayoutLaunchedApart) {
  REQUIRE_CUDA_KERNELS();
  struct Case {
    int64_t hq, hkv, d, capacity, position;
  };
  const int64_t tail_room = 6;
  hip::HipParams p;
  p.k = 64, p.b_k = 2, p.b_q = 64, p.b_sq = 1, p.sink = 2, p.window = 4;
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  int checked = 0;
  for (const Case& c : {Case{32, 8, 128, 4096, 3000}, Case{8, 2, 64, 2048, 1500}, Case{8, 2, 128, 1024, 40},
                        Case{8, 2, 128, 1024, 1023}}) {
    for (const bool after_prior : {false, true}) {
      at::manual_seed(c.position + c.hq);
      const at::Tensor q = at::randn({c.hq, 1, c.d}, cuda.dtype(at::kBFloat16));
      const at::Tensor k = at::randn({c.hkv, c.capacity, c.d}, cuda.dtype(at::kBFloat16));
      if (c.position + 1 < c.capacity) k.narrow(1, c.position + 1, c.capacity - c.position - 1).fill_(50.0);
      ASSERT_TRUE(hip_torch::refresh_in_decode_graph_supported(q, k, p)) << "hq " << c.hq << " d " << c.d;
      const hip_torch::MaskTensors apart = hip_torch::estimate_masks(q, k.narrow(1, 0, c.position + 1), p);
      const hip_torch::DecodeRows want = hip_torch::decode_rows(apart, hip::search_hi(p, c.position), tail_room);
      hip_torch::DecodeRows got{at::full_like(want.rows, -7), at::full_like(want.counts_by_extra, -7)};
      const at::Tensor position = at::full({1}, c.position, cuda.dtype(at::kLong));
      if (after_prior) q.add_(0);  // a kernel before it on the stream, writing Q
      hip_torch::refresh_decode_rows_on_stream(q, k, p, position, got, tail_room, nullptr, after_prior);
      const bool searched = apart.iterations.max().item<int32_t>() > 0;
      EXPECT_TRUE(got.rows.equal(want.rows)) << "position " << c.position << " after_prior " << after_prior;
      EXPECT_TRUE(got.counts_by_extra.equal(want.counts_by_extra)) << "position " << c.position;
      EXPECT_EQ(searched, c.position != 40) << "position " << c.position << ": the case's search ran or not";
      ++checked;
    }
  }
  std::printf("[gpu] graph refresh rows (device position, search writing its rows) equal the search and layout "
              "launched apart in %d cases\n", checked);
  // Outside the few-search kernel's shapes (float32; two queries) it is not offered, and refused.
  const at::Tensor q32 = at::randn({8, 1, 128}, cuda), k32 = at::randn({2, 256, 128}, cuda);
  EXPECT_FALSE(hip_torch::refresh_in_decode_graph_supported(q32, k32, p));
  hip_torch::DecodeRows rows{at::zeros({8, 1, 32 + tail_room}, cuda.dtype(at::kInt)),
                             at::zeros({tail_room + 1, 8, 1}, cuda.dtype(at::kInt))};
  EXPECT_ANY_THROW(hip_torch::refresh_decode_rows_on_stream(q32, k32, p, at::zeros({1}, cuda.dtype(at::kLong)), rows,
                                                            tail_room, nullptr, false));
  const at::Tensor q2 = at::randn({8, 2, 128}, cuda.dtype(at::kBFloat16)), k2 = at::randn({2, 256, 128}, cuda.dtype(at::kBFloat16));
  EXPECT_ANY_THROW(hip_torch::refresh_in_decode_graph_supported(q2, k2, p));
}

}  // namespace
}  // namespace hipstudio
