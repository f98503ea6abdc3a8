#pragma once
// MInference's vertical-slash pattern (Jiang et al. 2024, MInference 1.0), per head, b = b_k:
//  1. The last L = min(64, tq) query rows r, visible ends p_r, attend exactly over keys [0, p_r]:
//     A[r, j] = exp_f64(x_j - max) / tree sum, x_j = dot_f64(q_r, k_j) * (1 / sqrt(d))
//     (fixed_order_f64.h: the same bits on every backend).
//  2. Vertical score v_j = sum_r A[r, j]; slash score s_o = sum_r A[r, p_r - o] (terms absent
//     where p_r - o < 0), both summed over r ascending from +0.0, for j, o in [0, P], P = max p_r.
//  3. V = the round(share k) keys of [0, P] with the largest v (vslash_vertical_share; fewer when
//     P + 1 is smaller), S = the k - |V| offsets with the largest s (likewise); ties: lower index.
//  4. Query block rows i0..i1: the selected tokens are V plus {p_i - o : o in S, i0 <= i <= i1},
//     those inside the range's keys [lo b, hi b) counted once; the blocks holding the most
//     (descending, ties: lower block) are kept, at most k / b_k and only blocks holding one, or
//     every block of the range when it holds at most k / b_k.
// V and S are the state a decode refresh keeps from the prompt: the current query's tokens are
// V plus {p - o : o in S}, so the slash follows the position.
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/methods/selection_method.h"

namespace hipstudio::hip::methods {

// L of step 1.
inline constexpr int64_t kVslashLastRows = 64;

struct VslashState final : MethodState {
  std::vector<std::vector<int64_t>> vertical;  // (hq) V: key indices, ascending
  std::vector<std::vector<int64_t>> slash;     // (hq) S: offsets, ascending
};

// |V| of step 3 before clamping to P + 1: round(share * k), halves away from zero.
int64_t vslash_vertical_count(const SelectionContext& ctx);

// Steps 1-3 on the prompt (its last L rows).
std::shared_ptr<const VslashState> vslash_state(const AttentionInputs& prompt, const SelectionContext& ctx);

// Step 4 for every (head, query block) of `in` with V and S of `state`.
MaskResult vslash_masks(const AttentionInputs& in, const SelectionContext& ctx, const VslashState& state);

}  // namespace hipstudio::hip::methods
