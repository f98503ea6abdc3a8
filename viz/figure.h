#pragma once
// Exported figures: their colours (a light "paper" style that ignores the UI theme, or the
// screen's own) and the layout of a mask figure (title, parameters, tick labels along both axes,
// legend beside the picture), computed once here and drawn by the PNG and SVG exporters alike.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "viz/mask_image.h"

namespace hipstudio::viz {

struct FigureStyle {
  std::string name;  // "paper", "dark"
  uint32_t background = 0, text = 0, text_dim = 0, axis = 0, grid = 0;
  // Chart series colours in order (a chart's series k without its own colour takes series[k % n]),
  // chosen to read on `background`.
  std::vector<uint32_t> series;
  MaskPalette mask;
  uint32_t series_color(size_t k) const { return series.empty() ? text : series[k % series.size()]; }
};
// White page, black text, the light mask palette: what a paper wants, whatever the UI shows.
FigureStyle paper_style();
// The UI's dark theme, for slides on dark backgrounds.
FigureStyle dark_style();
// "paper" or "dark" (throws std::invalid_argument otherwise).
FigureStyle figure_style(const std::string& name);
// "#rrggbb" of a colour packed as pack_rgba8.
std::string css_color(uint32_t packed);

struct FigureLabel {
  std::string text;
  double x = 0, y = 0;   // anchor point; y is the top of the text line
  int align = -1;        // -1 left, 0 centre, 1 right of x
  bool title = false;    // the figure's title (bold in SVG)
  bool dim = false;      // secondary text (axis names, parameters)
  bool up = false;       // turned a quarter turn anticlockwise (a y-axis name): x is the left edge
                         // of the turned line, y its centre, align ignored
};
struct FigureSwatch {
  double x = 0, y = 0, size = 0;  // a size x size square at (x, y)
  uint32_t color = 0;
};
struct FigureLine {
  double x0, y0, x1, y1;
};

struct MaskFigureText {
  std::string title;                                     // "HiP mask: layer 4, head 3"
  std::string subtitle;                                  // parameters and quality, word-wrapped to the width
  std::vector<std::pair<std::string, uint32_t>> legend;  // label, colour (short labels: the column is narrow)
  uint32_t frame = 0;       // the picture's frame colour when nonzero (a dense layer's), else the axis colour
};

// A square width x width figure: the (tq x tk) picture fitted inside with its aspect, keys ticked
// along the top, queries down the left, the legend to the right. Below kMaskFigureMinSide the
// picture fills the canvas with no text (there is no room to read any).
struct MaskFigureLayout {
  double width = 0, height = 0;
  double img_x = 0, img_y = 0, img_w = 0, img_h = 0;  // where the picture goes
  double line_height = 0;
  std::vector<FigureLabel> labels;
  std::vector<FigureLine> ticks;
  std::vector<FigureSwatch> swatches;
};
inline constexpr double kMaskFigureMinSide = 240;
// The type of a side-px mask figure, one for the PNG and the SVG exporters: the layout's line
// height and the text's em size (a title is bold at 1.15 x font); a label's baseline sits at its
// y + font.
struct FigureType {
  double line_height = 0, font = 0;
};
FigureType mask_figure_type(double side);
// The width the layouts give `text` at em size `font`: the screen font's advance (the PNG's pixels;
// viz/vector_font.h), so the PNG and the SVG place everything at the same coordinates; 0.56 em a
// character where the font file is missing.
double figure_text_width(const std::string& text, double font);
// `text_width(s)`: the renderer's width of s in px at `line_height`.
MaskFigureLayout layout_mask_figure(const MaskFigureText& text, int64_t tq, int64_t tk, double side, double line_height,
                                    const std::function<double(const std::string&)>& text_width);

}  // namespace hipstudio::viz
