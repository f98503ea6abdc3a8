#pragma once
// A figure's SVG as a one-page PDF: the same drawing commands (the SVG the exporters write) drawn
// as PDF vector paths and text, so a PDF and its SVG show one picture. Covers the subset our
// exporters emit: svg (width, height), g (fill, stroke, stroke-width, font-size, fill-opacity,
// transform translate/scale), rect, line, polyline, circle, path (M/m, H/h, V/v, L/l, Z), text
// (text-anchor, font-size, font-weight bold, rotate(a x y)); <title> is skipped. Text is set in the
// standard Type1 fonts Helvetica / Helvetica-Bold (no font file embedded), widths from their AFM
// metrics so centred and right-aligned labels land where the SVG puts them. Opacity is blended
// against the page's background colour (PDF 1.4 transparency is not used).
#include <string>

namespace hipstudio::viz {

// Throws std::invalid_argument when `svg` is not an <svg> document with a width and a height.
std::string svg_to_pdf(const std::string& svg);

// Helvetica's advance width of `text` at `font_size` (AFM widths of printable ASCII; other bytes
// count as an 'n').
double helvetica_width(const std::string& text, double font_size, bool bold = false);

}  // namespace hipstudio::viz
