#include "kernels/attention_inputs.h"

#include <string>

namespace hipstudio::hip {

void validate_attention_inputs(const AttentionInputs& in, bool need_v) {
  auto fail = [](const std::string& m) { throw AttentionInputError(m); };
  auto s = [](int64_t v) { return std::to_string(v); };
  if (in.hq < 1 || in.hkv < 1 || in.tq < 1 || in.tk < 1 || in.d < 1) {
    fail("attention inputs need at least one head, query, key and dimension (hq " + s(in.hq) + ", hkv " +
         s(in.hkv) + ", tq " + s(in.tq) + ", tk " + s(in.tk) + ", d " + s(in.d) + ")");
  }
  if (in.hq % in.hkv != 0) {
    fail("query heads (" + s(in.hq) + ") must be a multiple of key/value heads (" + s(in.hkv) + ")");
  }
  if (!in.q || !in.k) fail("attention inputs need Q and K data");
  if (need_v && !in.v) fail("attention outputs need V: pass V with the same shape as K");
  if (in.tk >= (int64_t{1} << 31)) fail("tk (" + s(in.tk) + ") must be below 2^31 (block indices are int32)");
  if (!in.positions) {
    if (in.tq > in.tk) {
      fail("Q has more queries (" + s(in.tq) + ") than K has keys (" + s(in.tk) +
           "): without positions query i sits at tk - tq + i; pass positions");
    }
    return;
  }
  for (int64_t i = 0; i < in.tq; ++i) {
    const int64_t p = in.positions[i];
    if (p < 0 || p >= in.tk) {
      fail("position of query " + s(i) + " is " + s(p) + ", outside the " + s(in.tk) + " keys [0, " +
           s(in.tk) + ")");
    }
  }
}

}  // namespace hipstudio::hip
