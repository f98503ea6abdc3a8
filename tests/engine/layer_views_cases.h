#pragma once
// One table of cases for the views layer (engine/analysis/layer_views_backend.h): each runs the tensor
// implementation chunk by chunk and the float64 reference on the same Q/K/V, on any device. The
// CPU suite (tests/engine) and the GPU suite (tests/gpu) run the same table.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "engine/analysis/layer_views_backend.h"

namespace hipstudio::testing {

struct LayerViewsCase {
  std::string name;
  int64_t hq = 4, hkv = 2, tokens = 300, dim = 32;
  hip::HipParams params;
  int64_t chunk = 0;          // prefill rows per chunk (a multiple of b_q); 0: one chunk
  int64_t tile_bytes = 0;     // 0: the default; small values force many tiles per chunk
  int64_t tied_blocks = 0;    // key blocks copied onto their right neighbour (oracle ties)
};

inline std::vector<LayerViewsCase> layer_views_cases() {
  std::vector<LayerViewsCase> cases;
  LayerViewsCase a;  // GQA, sink and window, b_sq 2, a partial last query block, chunks and tiles
  a.name = "gqa_sink_window_chunks_tiles";
  a.params.k = 32;
  a.params.b_q = 16;
  a.params.b_k = 2;
  a.params.b_sq = 2;
  a.params.sink = 4;
  a.params.window = 8;
  a.chunk = 128;
  a.tile_bytes = 2 * 300 * 8 * 20;  // about 20 rows a tile: several tiles per chunk
  cases.push_back(a);
  LayerViewsCase b;  // multi-head, b_k 4 with b_sk 2, rho "first", one chunk
  b.name = "mha_bk4_bsk2_first";
  b.hq = b.hkv = 2;
  b.tokens = 257;
  b.params.k = 32;
  b.params.b_q = 8;
  b.params.b_k = 4;
  b.params.b_sk = 2;
  b.params.rho = 0.0;
  cases.push_back(b);
  LayerViewsCase c;  // equal block scores: the oracle's tie rule (smaller block first)
  c.name = "ties";
  c.hq = 2;
  c.hkv = 1;
  c.tokens = 200;
  c.params.k = 16;
  c.params.b_q = 8;
  c.params.b_k = 2;
  c.tied_blocks = 30;
  c.chunk = 96;
  cases.push_back(c);
  LayerViewsCase d;  // a budget above every range: every block selected, no search
  d.name = "budget_covers_all";
  d.tokens = 120;
  d.params.k = 512;
  d.params.b_q = 32;
  cases.push_back(d);
  return cases;
}

// A Llama-shaped layer at 8k tokens (GQA 4:1, d 128, the paper's k 512, b_q 64, b_sq 2) in two
// prefill chunks: the GPU suite's long case (the float64 reference takes minutes of it on 2 cores).
inline LayerViewsCase llama_shaped_layer_views_case() {
  LayerViewsCase c;
  c.name = "llama_shaped_8k";
  c.hq = 8;
  c.hkv = 2;
  c.tokens = 8192;
  c.dim = 128;
  c.params.k = 512;
  c.params.b_q = 64;
  c.params.b_sq = 2;
  c.params.b_k = 2;
  c.chunk = 4096;
  return c;
}

// Q (hq, T, d), K and V (hkv, T, d) in float32: keys drift (a random walk) so scores have
// locality, as real keys do; tied_blocks blocks are copies of their left neighbour.
struct LayerViewsInputs {
  at::Tensor q, k, v;
};
inline LayerViewsInputs layer_views_inputs(const LayerViewsCase& c, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  LayerViewsInputs in;
  in.q = at::randn({c.hq, c.tokens, c.dim}, gen, at::kFloat);
  in.k = (at::randn({c.hkv, c.tokens, c.dim}, gen, at::kFloat) * 0.2).cumsum(1) * 0.3 +
         at::randn({c.hkv, c.tokens, c.dim}, gen, at::kFloat) * 0.5;
  in.v = at::randn({c.hkv, c.tokens, c.dim}, gen, at::kFloat);
  const int64_t bk = c.params.b_k;
  for (int64_t j = 0; j < c.tied_blocks; ++j) {
    const int64_t from = (3 * j + 1) * bk;
    if (from + 2 * bk > c.tokens) break;
    in.k.narrow(1, from + bk, bk).copy_(in.k.narrow(1, from, bk));
  }
  return in;
}

inline LayerViewsSetup layer_views_setup(const LayerViewsCase& c) {
  LayerViewsSetup s;
  s.layer = 3;
  s.prompt_tokens = c.tokens;
  s.params = c.params;
  s.seed = 11;
  s.keep_masks = true;
  if (c.tile_bytes > 0) s.tile_bytes = c.tile_bytes;
  return s;
}

// The tensor implementation fed in chunks, as the chunked prefill feeds it. With hip_from_kernels,
// each chunk carries the mask `mask_of(q_chunk, k_prefix)` returns (the forward pass's).
template <class MaskOf>
LayerViewsResult tensor_views_in_chunks(const LayerViewsCase& c, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        MaskOf&& mask_of) {
  auto views = make_tensor_layer_views(layer_views_setup(c));
  const int64_t chunk = c.chunk > 0 ? c.chunk : c.tokens;
  for (int64_t a = 0; a < c.tokens; a += chunk) {
    const int64_t rows = std::min(chunk, c.tokens - a);
    LayerViewsChunk ch;
    ch.q = q.narrow(1, a, rows);
    ch.k = k.narrow(1, 0, a + rows);
    ch.v = v.narrow(1, 0, a + rows);
    ch.first_row = a;
    ch.hip_blocks = mask_of(ch.q, ch.k);
    views->add_chunk(ch);
  }
  return views->finish();
}

}  // namespace hipstudio::testing
