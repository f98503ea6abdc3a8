#include "engine/offload/offload_simulator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/formats/errors.h"

namespace hipstudio::offload {

const char* offload_context_name(OffloadContext context) {
  return context == OffloadContext::Mask ? "mask" : "sparse";
}

// ---- sizes and validation --------------------------------------------------------------------

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError("offloading: " + message);
}

void require_head(const AccessStreams& s, int64_t layer, int64_t head) {
  require(layer >= 0 && layer < s.layers && head >= 0 && head < s.heads,
          "(layer " + std::to_string(layer) + ", head " + std::to_string(head) + ") is not in the run's " +
              std::to_string(s.layers) + " HiP layers x " + std::to_string(s.heads) + " heads; pick one inside");
}

}  // namespace

int64_t default_mask_bank_tokens(double cache_factor, int64_t k, int64_t b_sk, int64_t context_tokens) {
  require(std::isfinite(cache_factor) && cache_factor >= 0,
          "cache factor c = " + std::to_string(cache_factor) + " must be a finite number >= 0 (the paper uses 2)");
  require(k >= 0, "k = " + std::to_string(k) + " is negative; give the number of keys kept per query");
  require(b_sk >= 1, "key block size b_sk = " + std::to_string(b_sk) + " must be >= 1");
  require(context_tokens >= 1, "context length T = " + std::to_string(context_tokens) + " must be >= 1");
  double tokens = cache_factor * (static_cast<double>(k) / static_cast<double>(b_sk)) *
                  std::log2(static_cast<double>(context_tokens));
  // The 1e-9 keeps an exact product (2 * 256 * 16 = 8192) from rounding up through float error;
  // the cap only keeps absurd factors from overflowing (a bank never fills past T anyway).
  return static_cast<int64_t>(std::ceil(std::min(tokens, 4.0e18) - 1e-9));
}

int64_t mask_bank_tokens(const OffloadConfig& config) {
  if (config.mask_bank_tokens != 0) return config.mask_bank_tokens;
  return default_mask_bank_tokens(config.cache_factor, config.k, config.b_sk, config.context_tokens);
}

int64_t sparse_bank_tokens(const OffloadConfig& config) {
  return config.sparse_bank_tokens != 0 ? config.sparse_bank_tokens : config.k;
}

void validate_config(const OffloadConfig& config) {
  require(config.mask_bank_tokens >= 0, "mask bank size " + std::to_string(config.mask_bank_tokens) +
                                            " is negative; give 0 for the default c * (k / b_sk) * log2 T");
  require(config.sparse_bank_tokens >= 0, "sparse bank size " + std::to_string(config.sparse_bank_tokens) +
                                              " is negative; give 0 for the default k");
  require(config.context_tokens <= INT32_MAX,
          "context length T = " + std::to_string(config.context_tokens) + " does not fit 32-bit positions");
  require(config.mask_bytes_per_token >= 0 && config.sparse_bytes_per_token >= 0,
          "bytes per token (mask " + std::to_string(config.mask_bytes_per_token) + ", sparse " +
              std::to_string(config.sparse_bytes_per_token) + ") must be >= 0");
  default_mask_bank_tokens(config.cache_factor, config.k, config.b_sk, config.context_tokens);  // checks c, k, b_sk, T
}

void validate_streams(const AccessStreams& s, int64_t context_tokens) {
  require(s.steps >= 0 && s.layers >= 0 && s.heads >= 0 && s.first_layer >= 0,
          "access streams have negative dimensions (steps " + std::to_string(s.steps) + ", layers " +
              std::to_string(s.layers) + ", heads " + std::to_string(s.heads) + ")");
  if (!s.hip_layers.empty()) {
    require(static_cast<int64_t>(s.hip_layers.size()) == s.layers,
            "access streams name " + std::to_string(s.hip_layers.size()) + " HiP layers but hold " +
                std::to_string(s.layers));
    for (size_t i = 0; i < s.hip_layers.size(); ++i)
      require(s.hip_layers[i] >= 0 && (i == 0 || s.hip_layers[i - 1] < s.hip_layers[i]),
              "access streams' HiP layers must be ascending model layers >= 0 (entry " + std::to_string(i) + " is " +
                  std::to_string(s.hip_layers[i]) + ")");
    require(s.first_layer == s.hip_layers.front(), "access streams' first_layer " + std::to_string(s.first_layer) +
                                                       " is not their first HiP layer " +
                                                       std::to_string(s.hip_layers.front()));
  }
  const size_t cells = static_cast<size_t>(s.steps * s.layers * s.heads);
  for (OffloadContext c : {OffloadContext::Mask, OffloadContext::Sparse}) {
    const auto& all = c == OffloadContext::Mask ? s.mask_keys : s.sparse_keys;
    require(all.size() == cells, std::string(offload_context_name(c)) + " streams hold " +
                                     std::to_string(all.size()) + " lists, expected steps x layers x heads = " +
                                     std::to_string(cells));
    for (size_t i = 0; i < cells; ++i) {
      const std::vector<int32_t>& keys = all[i];
      for (size_t j = 0; j < keys.size(); ++j) {
        bool inside = keys[j] >= 0 && keys[j] < context_tokens;
        bool ascending = j == 0 || keys[j - 1] < keys[j];
        if (inside && ascending) continue;
        const int64_t head = static_cast<int64_t>(i) % s.heads;
        const int64_t layer = static_cast<int64_t>(i) / s.heads % s.layers;
        const int64_t step = static_cast<int64_t>(i) / s.heads / s.layers;
        throw InputError("offloading: " + std::string(offload_context_name(c)) + " keys of step " +
                         std::to_string(step) + ", layer " + std::to_string(s.model_layer(layer)) + ", head " +
                         std::to_string(head) + ": position " + std::to_string(keys[j]) +
                         (inside ? " repeats or breaks ascending order; streams must hold sorted unique positions"
                                 : " is outside the context [0, " + std::to_string(context_tokens) +
                                       "); set T to the run's context length"));
      }
    }
  }
}

// ---- replay ----------------------------------------------------------------------------------

namespace {

const std::vector<int32_t>& keys_of(const AccessStreams& s, OffloadContext c, int64_t step, int64_t layer,
                                    int64_t head) {
  return c == OffloadContext::Mask ? s.mask(step, layer, head) : s.sparse(step, layer, head);
}

BankConfig bank_config(const OffloadConfig& config, OffloadContext c, int64_t capacity) {
  BankConfig b;
  b.capacity = capacity;
  b.context_tokens = config.context_tokens;
  b.bytes_per_token = c == OffloadContext::Mask ? config.mask_bytes_per_token : config.sparse_bytes_per_token;
  b.table = config.table;
  b.policy = config.policy;
  return b;
}

// Replays every step of one (layer, head) through an emptied bank; on_step(step, counts, tokens,
// outcome) sees each step (outcome is filled only when want_outcome).
template <class OnStep>
void replay_head(const AccessStreams& s, OffloadContext c, int64_t layer, int64_t head, TokenBank& bank,
                 bool want_outcome, OnStep&& on_step) {
  bank.reset();
  std::vector<uint8_t> outcome;
  for (int64_t step = 0; step < s.steps; ++step) {
    const std::vector<int32_t>& tokens = keys_of(s, c, step, layer, head);
    BankCounts counts = bank.access(tokens, want_outcome ? &outcome : nullptr);
    on_step(step, counts, tokens, outcome);
  }
}

AccessMap empty_map(int64_t steps, int64_t tokens) {
  AccessMap map;
  map.steps = steps;
  map.tokens = tokens;
  map.cells.assign(static_cast<size_t>(steps * tokens), kAccessNone);
  return map;
}

// Folds one step's outcomes into a map row, keeping the worse outcome per cell.
void mark(AccessMap& map, int64_t step, const std::vector<int32_t>& tokens, const std::vector<uint8_t>& outcome) {
  uint8_t* row = map.cells.data() + step * map.tokens;
  for (size_t i = 0; i < tokens.size(); ++i) row[tokens[i]] = std::max(row[tokens[i]], outcome[i]);
}

ContextStats simulate_context(const AccessStreams& s, const OffloadConfig& config, OffloadContext c) {
  ContextStats st;
  st.context = c;
  st.bank_tokens = c == OffloadContext::Mask ? mask_bank_tokens(config) : sparse_bank_tokens(config);
  TokenBank bank(bank_config(config, c, st.bank_tokens));
  st.bytes_per_token = bank_config(config, c, 0).bytes_per_token;
  st.page_table_bytes = bank.page_table_bytes();
  st.per_step.resize(static_cast<size_t>(s.layers * s.heads * s.steps));
  st.per_head.resize(static_cast<size_t>(s.layers * s.heads));
  st.per_layer.resize(static_cast<size_t>(s.layers));
  st.per_step_total.resize(static_cast<size_t>(s.steps));
  if (config.build_access_map) st.map = empty_map(s.steps, config.context_tokens);
  // Heads are independent (one bank each), so replaying one head at a time keeps one bank alive.
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    for (int64_t head = 0; head < s.heads; ++head) {
      const int64_t lh = layer * s.heads + head;
      replay_head(s, c, layer, head, bank, config.build_access_map,
                  [&](int64_t step, const BankCounts& counts, const std::vector<int32_t>& tokens,
                      const std::vector<uint8_t>& outcome) {
                    st.per_step[static_cast<size_t>(lh * s.steps + step)] = counts;
                    st.per_head[static_cast<size_t>(lh)] += counts;
                    st.per_layer[static_cast<size_t>(layer)] += counts;
                    st.per_step_total[static_cast<size_t>(step)] += counts;
                    st.total += counts;
                    if (config.build_access_map) mark(st.map, step, tokens, outcome);
                  });
    }
  }
  return st;
}

}  // namespace

OffloadResult simulate_offloading(const AccessStreams& streams, const OffloadConfig& config) {
  validate_config(config);
  validate_streams(streams, config.context_tokens);
  OffloadResult r;
  r.steps = streams.steps;
  r.layers = streams.layers;
  r.heads = streams.heads;
  r.first_layer = streams.first_layer;
  for (int64_t i = 0; i < streams.layers; ++i) r.hip_layers.push_back(streams.model_layer(i));
  r.context_tokens = config.context_tokens;
  r.mask = simulate_context(streams, config, OffloadContext::Mask);
  r.sparse = simulate_context(streams, config, OffloadContext::Sparse);
  return r;
}

int64_t hip_layer_index(const AccessStreams& streams, int64_t model_layer) {
  for (int64_t i = 0; i < streams.layers; ++i)
    if (streams.model_layer(i) == model_layer) return i;
  return -1;
}

AccessMap head_access_map(const AccessStreams& streams, const OffloadConfig& config, OffloadContext context,
                          int64_t layer, int64_t head) {
  validate_config(config);
  validate_streams(streams, config.context_tokens);
  require_head(streams, layer, head);
  int64_t capacity = context == OffloadContext::Mask ? mask_bank_tokens(config) : sparse_bank_tokens(config);
  TokenBank bank(bank_config(config, context, capacity));
  AccessMap map = empty_map(streams.steps, config.context_tokens);
  replay_head(streams, context, layer, head, bank, true,
              [&](int64_t step, const BankCounts&, const std::vector<int32_t>& tokens,
                  const std::vector<uint8_t>& outcome) { mark(map, step, tokens, outcome); });
  return map;
}

std::vector<HitRatioPoint> hit_ratio_curve(const AccessStreams& streams, const OffloadConfig& config,
                                           OffloadContext context, const std::vector<int64_t>& bank_sizes,
                                           int64_t layer, int64_t head) {
  validate_config(config);
  validate_streams(streams, config.context_tokens);
  const bool all_heads = layer < 0 && head < 0;
  if (!all_heads) require_head(streams, layer, head);
  std::vector<HitRatioPoint> curve;
  curve.reserve(bank_sizes.size());
  for (int64_t size : bank_sizes) {
    require(size >= 0, "hit-ratio curve: bank size " + std::to_string(size) + " is negative");
    TokenBank bank(bank_config(config, context, size));
    HitRatioPoint point;
    point.bank_tokens = size;
    auto add = [&](int64_t, const BankCounts& counts, const std::vector<int32_t>&, const std::vector<uint8_t>&) {
      point.counts += counts;
    };
    for (int64_t l = 0; l < streams.layers; ++l) {
      for (int64_t h = 0; h < streams.heads; ++h) {
        if (all_heads || (l == layer && h == head)) replay_head(streams, context, l, h, bank, false, add);
      }
    }
    point.hit_ratio = hit_ratio(point.counts);
    curve.push_back(point);
  }
  return curve;
}

}  // namespace hipstudio::offload
