#pragma once
// PNG images of one head's block mask, rendered offscreen (no window, no GPU): rows are query
// blocks, columns key blocks. A cell is coloured by what attends it (sink/window, HiP and the
// oracle agreeing, HiP only, oracle only) and pale when causally visible but unselected. Large
// masks are max-pooled (the strongest colour of a pooled cell wins) to the requested size, or cut
// into full-detail tiles. The GUI may later use viz's renderer instead; the colours match the legend.
#include <cstdint>
#include <string>
#include <vector>

#include "captures/capture.h"

namespace hipstudio::captures {

struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // (height, width, 3)
};

// Full-resolution cell classes of one head: (query_blocks, key_blocks) values of MaskCell.
enum MaskCell : uint8_t { kCellHidden = 0, kCellVisible = 1, kCellOracleOnly = 2, kCellHipOnly = 3, kCellBoth = 4, kCellDense = 5 };
struct MaskCells {
  int64_t rows = 0, cols = 0;
  int64_t row_repeat = 1;       // b_q / b_k: image rows per query block, so the image is square in tokens
  std::vector<uint8_t> cells;   // (rows, cols)
  int64_t image_rows() const { return rows * row_repeat; }
  uint8_t at_image(int64_t image_row, int64_t col) const { return cells[(image_row / row_repeat) * cols + col]; }
};
MaskCells mask_cells(const LayerMasks& masks, const hip::HipParams& p, int64_t tokens, int64_t head);

// Images have image_rows() x cols cells. Max-pooled to fit max_side x max_side (cells are never enlarged beyond `scale` pixels each, so
// small masks stay crisp: scale 0 picks the largest integer that fits).
RgbImage render_mask(const MaskCells& cells, int64_t max_side, int64_t scale = 0);
// Full detail (one pixel per cell) cut into tiles of at most tile x tile pixels, row-major.
std::vector<RgbImage> render_mask_tiles(const MaskCells& cells, int64_t tile);

// PNG file bytes (stb_image_write); throws InputError when encoding fails.
std::string encode_png(const RgbImage& image);

}  // namespace hipstudio::captures
