#include "kernels/hip_param_fields.h"

namespace hipstudio::hip {

namespace {

// CLI ranges: sizes are token counts that must fit the kernels' int32 positions with room for the
// products they form (k / b_k blocks per query block, log2 T levels); 2^20 tokens of budget, sink
// or window is beyond every context this tool runs, 4096 beyond any useful block or stride.
constexpr double kMaxTokens = 1 << 20;
constexpr double kMaxBlock = 4096;

using F = HipField;
// clang-format off
const std::array<HipParamField, kHipFieldCount> kFields = {{
  {F::kK, true, "--topk", "top-k budget in tokens (k)", 1, kMaxTokens, "k", "k", "k", "k",
   "k: top-k budget in tokens; k / b_k key blocks per query block.", 1, 64, 512, 32},
  {F::kBq, true, "--bq", "query block size (b_q)", 1, kMaxBlock, "b_q", "b_q", "b_q", "b_q",
   "b_q: query rows that share one mask (query block).", 1, 64, 32, 8},
  {F::kBk, true, "--bk", "key block size (b_k)", 1, kMaxBlock, "b_k", "b_k", "b_k", "b_k",
   "b_k: key block size, the unit the search selects.", 1, 32, 2, 2},
  {F::kBsq, true, "--bsq", "query stride when scoring a branch (b_sq)", 1, kMaxBlock, "b_sq", "b_sq", "b_sq", "b_sq",
   "b_sq: stride over the query rows when scoring a branch.", 1, 16, 1, 1},
  {F::kBsk, true, "--bsk", "key stride when scoring a branch (b_sk)", 1, kMaxBlock, "b_sk", "b_sk", "b_sk", "b_sk",
   "b_sk: stride over the keys of a representative block.", 1, 16, 1, 1},
  {F::kSink, true, "--sink", "sink tokens S always attended", 0, kMaxTokens, "sink", "sink", "sink", "sink",
   "sink: keys [0, sink) are always attended (StreamingLLM sink).", 0, 64, 0, 2},
  {F::kWindow, true, "--window", "sliding-window tokens W attended densely", 0, kMaxTokens, "window", "window", "window",
   "window", "window: the most recent keys attended densely (sliding window).", 0, 128, 0, 4},
  {F::kRho, false, "--repr", "representative of a branch: center, first, last or a FRACTION in [0, 1]", 0, 1, "repr",
   "rho", "rho", "repr", "repr: representative key block of a branch: 0 first, 0.5 center, 1 last.", 0, 1, 0.5, 0.5},
  // l_d's bound keeps the number sane; the model's full-attention layers bound it for real
  // (HipOptions::check_dense_layers, the GUI's knob_break).
  {F::kDenseLayers, true, "--ld", "dense layers l_d (the first l_d full-attention layers skip HiP)", 0, 4096, "l_d", "l_d", "l_d", "l_d",
   "l_d: the first l_d full-attention layers stay dense (sliding-window layers keep their window).", 0, 6, 3, 1},
  {F::kRefreshEvery, true, "--rm", "mask refresh interval r_m in decode steps", 1, kMaxTokens, "r_m", "r_m", "r_m", "r_m",
   "r_m: decode steps per mask re-estimation.", 1, 32, 8, 4},
  {F::kCacheFactor, false, "--cache-factor", "offloading: mask-estimation bank of c * (k / b_sk) * log2 T tokens", 1e-3,
   1e3, nullptr, nullptr, "c", "c",
   "c (cache factor): offloading's mask-estimation bank of c * (k / b_sk) * log2 T tokens per head.", 0, 8, 2, 2},
  // The context bounds the steps for real (checked against the model before it loads).
  {F::kDecodeSteps, true, "--decode", "greedy decode steps after the prompt", 0, kMaxTokens, "decode", "decode_steps",
   "decode_steps", "decode",
   "decode: greedy decode steps after the prompt (KV cache view); at most the context left after the prompt.", 0, 64, 0,
   16},
}};
// clang-format on

}  // namespace

const std::array<HipParamField, kHipFieldCount>& hip_param_fields() { return kFields; }

const HipParamField& hip_param_field(HipField f) { return kFields.at(static_cast<size_t>(f)); }

int64_t* hip_size_field(HipParams& p, HipField f) {
  switch (f) {
    case HipField::kK: return &p.k;
    case HipField::kBq: return &p.b_q;
    case HipField::kBk: return &p.b_k;
    case HipField::kBsq: return &p.b_sq;
    case HipField::kBsk: return &p.b_sk;
    case HipField::kSink: return &p.sink;
    case HipField::kWindow: return &p.window;
    default: return nullptr;
  }
}

int64_t hip_size_value(const HipParams& p, HipField f) {
  HipParams copy = p;
  return *hip_size_field(copy, f);
}

}  // namespace hipstudio::hip
