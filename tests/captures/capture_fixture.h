#pragma once
// A small synthetic paired analysis (no model needed): 2 layers, 2 query heads on 1 KV head, 40
// prompt tokens, head dim 8, 3 decode steps, deterministic pseudo-random Q/K/V, and the capture
// built from it with every view.
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "captures/capture.h"
#include "captures/content_hash.h"
#include "captures/npy.h"
#include "captures/zip_store.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio::testing {

inline PairedAnalysis synthetic_analysis(int64_t tokens = 40) {
  PairedAnalysis a;
  const int64_t L = 2, H = 2, G = 1, D = 8, S = 3;
  a.options.hip.hip.k = 8;
  a.options.hip.hip.b_q = 4;
  a.options.hip.hip.b_k = 2;
  a.options.hip.hip.sink = 2;
  a.options.hip.hip.window = 2;
  a.options.hip.dense_layers = 1;
  a.options.hip.refresh_every = 2;
  a.options.decode_steps = S;
  a.options.random_seed = 7;
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) % 2001) / 1000.0f - 1.0f;
  };
  for (int64_t i = 0; i < tokens; ++i) a.prompt_ids.push_back(static_cast<int32_t>(1 + (i * 37) % 500));
  for (SideResult* side : {&a.dense, &a.hip}) {
    for (int64_t i = 0; i + 1 < tokens; ++i) side->nll.push_back(1.0 + 0.5 * std::sin(static_cast<double>(i)) + (side == &a.hip ? 0.01 : 0));
    side->mean_nll = 1.2;
    side->ppl = std::exp(side->mean_nll);
    side->generated = {11, 12, 13};
    for (int64_t l = 0; l < L; ++l) {
      side->latency.prefill_layers.push_back({0.25 * l, 1.0 + l, l < 1 ? 2.0 : 0.0, 0.5});
      side->latency.decode_layers.push_back({0.01, 0.02, 0.03, 0.04});
    }
    side->latency.prefill = {0.25, 3.0, 2.0, 1.0};
    side->latency.decode_step = {0.02, 0.04, 0.06, 0.08};
  }
  a.hip.ppl = std::exp(1.25);
  a.kl = 0.0123;
  a.top1_agreement = 0.95;
  for (int64_t l = 0; l < L; ++l) {
    LayerQuality q;
    q.layer = l;
    q.dense = l < 1;
    for (int64_t h = 0; h < H; ++h) q.heads.push_back({0.8 + 0.05 * h, 0.3, 0.9, 0.4, 0.01 * (l + 1), 0.2});
    a.layers.push_back(q);
  }
  for (int64_t s = 0; s < S; ++s) a.decode.push_back({s, tokens + s, 100 + static_cast<int32_t>(s), 100 + static_cast<int32_t>(s), s % 2 == 0, 40 + s, 20 + s});
  a.mask_refreshes = 2;
  a.access.steps = S;
  a.access.layers = 1;
  a.access.heads = H;
  a.access.first_layer = 1;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<int32_t> mask, sparse;
      for (int32_t k = static_cast<int32_t>(h); k < tokens + s; k += 3) mask.push_back(k);
      for (int32_t k = static_cast<int32_t>(s); k < tokens + s; k += 5) sparse.push_back(k);
      a.access.mask_keys.push_back(mask);
      a.access.sparse_keys.push_back(sparse);
    }
  for (int64_t l = 0; l < L; ++l) {
    LayerInputs in;
    in.layer = l;
    in.heads = H;
    in.kv_heads = G;
    in.tokens = tokens;
    in.dim = D;
    LayerInputArrays arrays;
    for (int64_t i = 0; i < H * tokens * D; ++i) arrays.q.push_back(next());
    for (int64_t i = 0; i < G * tokens * D; ++i) arrays.k.push_back(next());
    for (int64_t i = 0; i < G * tokens * D; ++i) arrays.v.push_back(next());
    in.set_host(std::move(arrays));
    a.inputs.push_back(std::move(in));
  }
  return a;
}

inline offload::OffloadConfig synthetic_offload_config(const PairedAnalysis& a) {
  offload::OffloadConfig c;
  c.k = a.options.hip.hip.k;
  c.b_sk = a.options.hip.hip.b_sk;
  c.context_tokens = static_cast<int64_t>(a.prompt_ids.size()) + a.options.decode_steps;
  c.mask_bytes_per_token = 32;
  c.sparse_bytes_per_token = 64;
  return c;
}

// The capture of analysis `a` with every view (the identity synthetic_capture gives it).
inline captures::Capture capture_of(PairedAnalysis a, int64_t tokens) {
  const offload::OffloadConfig oc = synthetic_offload_config(a);
  captures::CaptureInfo info;
  info.run = {"0.1.0", "synthetic <model> & co", "llama", "cpu (1 threads), f32", "Once upon a time \"quoted\" <tag>"};
  info.model_sha256 = std::string(64, 'a');
  info.dtype = "f32";
  info.created = "2026-11-23T01:00:00Z";
  // Pieces with a quote, markup and a non-ASCII letter, as a tokenizer's text can hold.
  captures::set_token_pieces(info, a, [](int32_t id) { return "\u2581t" + std::to_string(id) + (id % 2 ? "\"<ü>" : ""); });
  captures::CaptureRequest request;
  const int64_t bq = a.options.hip.hip.b_q;
  request.traces = {{1, 0, (tokens + bq - 1) / bq - 1}, {0, 1, 3}};  // the last query block, and one early
  request.threads = 1;
  return captures::build_capture(std::move(a), info, request, &oc);
}

inline captures::Capture synthetic_capture(int64_t tokens = 40) { return capture_of(synthetic_analysis(tokens), tokens); }

// The archive with manifest.json replaced by edit(manifest) (CRCs recomputed: the damage is semantic).
inline std::string with_manifest(const std::string& bytes, const std::function<void(nlohmann::json&)>& edit) {
  auto entries = captures::zip_decode(bytes, "x");
  for (captures::ZipEntry& e : entries)
    if (e.name == "manifest.json") {
      nlohmann::json m = nlohmann::json::parse(e.data);
      edit(m);
      e.data = m.dump(1);
    }
  return captures::zip_encode(entries);
}

// The archive with the manifest changed by manifest(m) and `array` (e.g. "masks/L3/dense_from") by
// edit(a), CRCs and the manifest's content_sha256 recomputed the way the format defines it, so that
// only the edited values are wrong, as a buggy writer or a hand edit would leave them.
inline std::string edited_capture(const std::string& bytes, const std::function<void(nlohmann::json&)>& manifest,
                                  const std::string& array = "", const std::function<void(captures::NpyArray&)>& edit = {}) {
  auto entries = captures::zip_decode(bytes, "x");
  for (captures::ZipEntry& e : entries) {
    if (e.name == "manifest.json" && manifest) {
      nlohmann::json m = nlohmann::json::parse(e.data);
      manifest(m);
      e.data = m.dump(1);
    }
    if (!array.empty() && e.name == array + ".npy") {
      captures::NpyArray a = captures::parse_npy(reinterpret_cast<const unsigned char*>(e.data.data()), e.data.size(), e.name);
      edit(a);
      const auto encoded = captures::encode_npy(a.dtype, a.shape, a.bytes.data());
      e.data.assign(encoded.begin(), encoded.end());
    }
  }
  captures::rehash_capture_manifest(entries);
  return captures::zip_encode(entries);
}

}  // namespace hipstudio::testing
