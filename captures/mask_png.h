#pragma once
// PNG images of one head's mask, rendered offscreen (no window, no GPU) by viz as the mask panel
// draws it: the (query token x key token) picture, max-pooled by viz::pool_mask_flags and coloured
// by viz's palette with the panel's default overlays (oracle hit / false pick / miss, sink and
// window; random baseline off). Exports use the light theme's palette: they land on white pages.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "captures/capture.h"
#include "viz/figure.h"
#include "viz/mask_image.h"

namespace hipstudio::captures {

struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // (height, width, 3)
};

// One head's picture and the colours an export draws it in.
struct MaskExport {
  viz::MaskPicture picture;   // (tokens x tokens) query x key
  viz::MaskPalette palette;   // viz::light_mask_palette() with the mask panel's default overlays
  // Full detail: one pixel per key block (b_k tokens) along both axes, so the image stays square
  // in tokens: (full_height(), full_width()) pixels.
  int64_t full_width() const { return (picture.tk + picture.b_k - 1) / picture.b_k; }
  int64_t full_height() const { return (picture.tq + picture.b_k - 1) / picture.b_k; }
};
MaskExport mask_export(const LayerMaskViews& masks, const hip::HipParams& p, int64_t tokens, int64_t head,
                       const viz::FigureStyle& style = viz::paper_style());
// The style's mask palette (light for paper) with the mask panel's default overlays (oracle when
// there is one).
viz::MaskPalette export_mask_palette(bool has_oracle, const viz::MaskPalette& base = viz::light_mask_palette());
// The colours of an exported mask and their meaning, in the mask panel's legend order (the
// report's legend). Colours are packed as viz packs them (R in the low byte).
// "dense tail" is the last `window` tokens and the diagonal block, attended whatever the window.
std::vector<std::pair<std::string, uint32_t>> mask_legend(const viz::MaskPalette& palette);

// The whole picture with its longest side exactly `longest_side` px (>= 1): max-pooled below one
// pixel per token, enlarged (nearest neighbour) above it.
RgbImage render_mask(const MaskExport& mask, int64_t longest_side);
// Full detail cut into tiles of at most tile x tile pixels, row-major (full_width() / tile
// rounded up per row).
std::vector<RgbImage> render_mask_tiles(const MaskExport& mask, int64_t tile);

// What a mask figure says: "HiP mask, layer L, head H" (with "(dense layer: what HiP would pick)"
// below l_d), the parameters, T and the head's recall from the views layer (analysis.layers), and
// the legend of the colours the picture uses.
// `run` (figure_context's "MODEL on DEVICE, DTYPE") leads the subtitle where given. The title names
// the layer's kind (captures/layer_kinds.h, from the analysis' per-layer maths) and the subtitle
// l_d as "l_d N of M full-attention layers". A layer HiP does not replace (a window layer, or dense under l_d) gets its
// own legend entry naming its kind: its picture frame is drawn in the palette's dense-layer colour,
// since that layer runs its own attention on both sides whatever the picture shows HiP would pick.
viz::MaskFigureText mask_figure_text(const MaskExport& mask, const PairedAnalysis& analysis, int64_t layer, int64_t head,
                                     const std::string& run = "");
// The figure (viz::layout_mask_figure) as a side x side PNG: the picture max-pooled into its place,
// tick labels, legend, title. Below viz::kMaskFigureMinSide the bare picture (render_mask).
RgbImage render_mask_figure(const MaskExport& mask, const viz::MaskFigureText& text, int64_t side, const viz::FigureStyle& style);
// The same figure as SVG (vector: one path per colour of the pooled cells, at most `max_cells`
// cells along each axis), `side` px nominal.
std::string svg_mask_figure(const MaskExport& mask, const viz::MaskFigureText& text, const viz::FigureStyle& style,
                            double side = 720, int64_t max_cells = 512);

// PNG file bytes (stb_image_write); throws InputError when encoding fails.
std::string encode_png(const RgbImage& image);

}  // namespace hipstudio::captures
