#pragma once
// The (query token x key token) picture of one head's block mask, drawn at any zoom without one
// quad per cell: every texel ORs the flags of the cells it covers (a max-pool of bit flags), so a
// single selected key among thousands still shows at the lowest level of detail. The pooled image
// is computed straight from the block lists, O(query blocks x Kb + texels), never from a T x T grid.
#include <cstdint>
#include <vector>

#include "kernels/mask_reference.h"
#include "viz/colormap.h"

namespace hipstudio::viz {

// Flags of one cell (query i, key j); a texel holds the OR over its cells.
// HiP vs oracle is decided per cell (hit / false pick / miss are separate bits), so pooling never
// turns a hit next to a miss into something else.
enum MaskFlag : uint8_t {
  kMaskVisible = 1,     // j <= position(i): the causal triangle
  kMaskHit = 2,         // j's key block was selected by HiP and by the exact top-k oracle
  kMaskFalsePick = 4,   // ... by HiP only
  kMaskMiss = 8,        // ... by the oracle only
  kMaskRandom = 16,     // ... by the random baseline
  kMaskSink = 32,       // j < sink
  kMaskDense = 64,      // dense tail: dense_from(i's block) <= j <= position(i)
  kMaskHip = kMaskHit | kMaskFalsePick,
};

// One head's selections over a prompt. Query i sits at position tk - tq + i (the prompt case).
struct MaskPicture {
  int64_t tq = 0, tk = 0;    // queries, keys
  int64_t b_q = 1, b_k = 1;  // block sizes
  int64_t sink = 0;
  std::vector<int64_t> dense_from;           // (query_blocks)
  std::vector<std::vector<int32_t>> hip;     // (query_blocks) selected key blocks
  std::vector<std::vector<int32_t>> oracle;  // (query_blocks) empty when not computed
  std::vector<std::vector<int32_t>> random;  // (query_blocks) empty when not computed
  int64_t query_blocks() const { return static_cast<int64_t>(dense_from.size()); }
  int64_t position(int64_t i) const { return tk - tq + i; }
};

// Picture of `head` from the engine's masks (oracle / random may be null).
MaskPicture make_mask_picture(const hip::MaskResult& hip, const hip::MaskResult* oracle, const hip::MaskResult* random,
                              int64_t head, int64_t tq, int64_t tk, const hip::HipParams& p);

// A layer that runs dense (l < l_d): every visible key of every query is attended, which the
// picture shows as one dense tail from key 0 (no HiP selection drawn).
MaskPicture make_dense_picture(int64_t tq, int64_t tk, const hip::HipParams& p);

// Cells [row0, row1) x [col0, col1) pooled into width x height texels; width <= col1 - col0 and
// height <= row1 - row0 so every texel covers at least one cell. Cell (i, j) lands in texel
// (floor((j - col0) * width / (col1 - col0)), floor((i - row0) * height / (row1 - row0))).
struct PoolRect {
  int64_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;
  int width = 0, height = 0;
};

// Flags of one cell: the definition the pooled image must match (tests compare the two).
uint8_t mask_cell_flags(const MaskPicture& m, int64_t i, int64_t j);

// (height, width) OR-pooled flags. Throws std::invalid_argument for an empty or oversized rect.
std::vector<uint8_t> pool_mask_flags(const MaskPicture& m, const PoolRect& rect);

// Which overlays the picture shows and in which colours.
struct MaskPalette {
  uint32_t future, empty, selected, hit, miss, false_pick, random, sink, dense;
  // The frame of a dense layer's picture (below l_d every key is attended; the picture shows what
  // HiP would pick): Okabe-Ito's reddish purple, packed as pack_rgba8 (R in the low byte).
  uint32_t dense_layer = 0xffa779ccu;
  bool show_oracle = true, show_random = false, show_sink_dense = true;
};
// The outcome colours: Okabe and Ito's colour-blind-safe set by default (every pair of outcomes,
// and each against "not attended", stays >= 24 CIE76 apart under simulated protanopia and
// deuteranopia; tests/gui checks it), or the earlier yellow / orange / pink set, whose hit and false
// pick a deuteranope sees as one yellow. Exports use the default.
enum class MaskColors { ColorBlindSafe, Classic };
MaskPalette dark_mask_palette(MaskColors colors = MaskColors::ColorBlindSafe);
MaskPalette light_mask_palette(MaskColors colors = MaskColors::ColorBlindSafe);

// Colour of one pooled texel. Priority: sink / dense tail, then HiP vs oracle (hit, false pick,
// miss; plain "selected" with the oracle hidden), then the random baseline, then visible / future.
uint32_t mask_texel_color(uint8_t flags, const MaskPalette& palette);
void colorize_mask(const std::vector<uint8_t>& flags, const MaskPalette& palette, std::vector<uint32_t>& rgba);

}  // namespace hipstudio::viz
