#pragma once
// Non-owning views of one layer's attention inputs, float32 C order. The engine, the `mask` command
// and the tests all hand the reference (and later the CUDA kernels) these views over their own
// buffers; nothing here copies or owns memory.
#include <cstdint>
#include <stdexcept>

#include "kernels/hip_params.h"

namespace hipstudio::hip {

struct AttentionInputs {
  const float* q = nullptr;            // (hq, tq, d)
  const float* k = nullptr;            // (hkv, tk, d)
  const float* v = nullptr;            // (hkv, tk, d); may be null when only masks are wanted
  const int64_t* positions = nullptr;  // (tq) key position of each query; null: tk - tq + i
  int64_t hq = 0;   // query heads
  int64_t hkv = 0;  // key/value heads; hq % hkv == 0, head h reads KV head h / (hq / hkv)
  int64_t tq = 0;   // queries
  int64_t tk = 0;   // keys
  int64_t d = 0;    // head dimension
};

// Thrown for inconsistent shapes or positions; what() names the problem.
class AttentionInputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Checks sizes >= 1 (d, heads, tq, tk), hq % hkv == 0, non-null q/k (and v when need_v), tq <= tk
// when positions are implicit, and every given position in [0, tk). Block indices are int32, so
// tk must stay below 2^31. Throws AttentionInputError.
void validate_attention_inputs(const AttentionInputs& in, bool need_v);

// The KV head that query head h reads.
inline int64_t kv_head(const AttentionInputs& in, int64_t h) { return h / (in.hq / in.hkv); }

// Position of query i (the index of the key it was produced with).
inline int64_t query_position(const AttentionInputs& in, int64_t i) {
  return in.positions ? in.positions[i] : in.tk - in.tq + i;
}

// Last key query i may attend: its position when causal, tk - 1 otherwise.
inline int64_t visible_end(const AttentionInputs& in, const HipParams& p, int64_t i) {
  return p.causal ? query_position(in, i) : in.tk - 1;
}

inline const float* q_row(const AttentionInputs& in, int64_t h, int64_t i) {
  return in.q + (h * in.tq + i) * in.d;
}
inline const float* k_row(const AttentionInputs& in, int64_t g, int64_t key) {
  return in.k + (g * in.tk + key) * in.d;
}
inline const float* v_row(const AttentionInputs& in, int64_t g, int64_t key) {
  return in.v + (g * in.tk + key) * in.d;
}

}  // namespace hipstudio::hip
