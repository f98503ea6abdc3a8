#include "viz/svg_pdf.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace hipstudio::viz {
namespace {

// Helvetica's AFM advance widths (1/1000 em) of ' ' (32) .. '~' (126).
constexpr short kHelvetica[95] = {
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556,
    556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556,
    556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584};
// Helvetica-Bold's, same range.
constexpr short kHelveticaBold[95] = {
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556,
    556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611,
    611, 278, 278, 556, 278, 889, 611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584};

struct Matrix {
  double a = 1, b = 0, c = 0, d = 1, e = 0, f = 0;
  Matrix then(const Matrix& m) const {  // this applied first, then m... as SVG nesting: parent * child
    return {m.a * a + m.c * b, m.b * a + m.d * b, m.a * c + m.c * d, m.b * c + m.d * d, m.a * e + m.c * f + m.e, m.b * e + m.d * f + m.f};
  }
};

struct Paint {
  std::string fill = "black", stroke = "none", dash, anchor = "start", weight;
  double stroke_width = 1, font_size = 12, fill_opacity = 1;
  Matrix ctm;
};

using Attrs = std::map<std::string, std::string>;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  std::string s = b;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string unescape(const std::string& t) {
  std::string o;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '&') {
      o += t[i];
      continue;
    }
    const size_t e = t.find(';', i);
    if (e == std::string::npos) {
      o += t[i];
      continue;
    }
    const std::string n = t.substr(i + 1, e - i - 1);
    if (n == "amp") o += '&';
    else if (n == "lt") o += '<';
    else if (n == "gt") o += '>';
    else if (n == "quot") o += '"';
    else if (n == "apos") o += '\'';
    else if (!n.empty() && n[0] == '#') {
      const long cp = n.size() > 1 && (n[1] == 'x' || n[1] == 'X') ? std::strtol(n.c_str() + 2, nullptr, 16) : std::strtol(n.c_str() + 1, nullptr, 10);
      o += cp < 256 ? static_cast<char>(cp) : '?';
    }
    i = e;
  }
  return o;
}

// UTF-8 to the single bytes a standard font shows (Latin-1; others as '?').
std::string latin1(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch < 0x80) o += static_cast<char>(ch);
    else if ((ch & 0xe0) == 0xc0 && i + 1 < s.size()) {
      const unsigned cp = ((ch & 0x1fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3fu);
      o += cp < 256 ? static_cast<char>(cp) : '?';
      ++i;
    } else {
      while (i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xc0) == 0x80) ++i;
      o += '?';
    }
  }
  return o;
}

bool parse_color(const std::string& v, double rgb[3]) {
  if (v.empty() || v == "none" || v == "transparent") return false;
  if (v[0] == '#' && (v.size() == 7 || v.size() == 4)) {
    for (int k = 0; k < 3; ++k) {
      const std::string h = v.size() == 7 ? v.substr(1 + 2 * k, 2) : std::string(2, v[1 + k]);
      rgb[k] = static_cast<double>(std::strtol(h.c_str(), nullptr, 16)) / 255.0;
    }
    return true;
  }
  static const std::map<std::string, int> names{{"white", 0xffffff}, {"black", 0}, {"red", 0xff0000}, {"gray", 0x808080}, {"grey", 0x808080}};
  const auto it = names.find(v);
  const int c = it == names.end() ? 0 : it->second;
  rgb[0] = ((c >> 16) & 255) / 255.0, rgb[1] = ((c >> 8) & 255) / 255.0, rgb[2] = (c & 255) / 255.0;
  return true;
}

double attr_num(const Attrs& a, const char* k, double fallback = 0) {
  const auto it = a.find(k);
  return it == a.end() ? fallback : std::strtod(it->second.c_str(), nullptr);
}

std::vector<double> numbers(const std::string& s) {
  std::vector<double> out;
  const char* p = s.c_str();
  while (*p) {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p) {
      ++p;
      continue;
    }
    out.push_back(v);
    p = end;
  }
  return out;
}

// translate(x [y]), scale(sx [sy]), rotate(a [cx cy]), matrix(...), applied left to right.
Matrix parse_transform(const std::string& t) {
  Matrix m;
  size_t at = 0;
  while (true) {
    const size_t open = t.find('(', at);
    if (open == std::string::npos) break;
    const size_t close = t.find(')', open);
    if (close == std::string::npos) break;
    std::string name = t.substr(at, open - at);
    name.erase(0, name.find_first_not_of(" ,"));
    name.erase(name.find_last_not_of(' ') + 1);
    const std::vector<double> v = numbers(t.substr(open + 1, close - open - 1));
    Matrix step;
    if (name == "translate" && !v.empty()) step.e = v[0], step.f = v.size() > 1 ? v[1] : 0;
    else if (name == "scale" && !v.empty()) step.a = v[0], step.d = v.size() > 1 ? v[1] : v[0];
    else if (name == "matrix" && v.size() == 6) step = {v[0], v[1], v[2], v[3], v[4], v[5]};
    else if (name == "rotate" && !v.empty()) {
      const double r = v[0] * 3.14159265358979323846 / 180, cs = std::cos(r), sn = std::sin(r);
      const double cx = v.size() > 2 ? v[1] : 0, cy = v.size() > 2 ? v[2] : 0;
      step = {cs, sn, -sn, cs, cx - cs * cx + sn * cy, cy - sn * cx - cs * cy};
    }
    m = step.then(m);  // the later transform applies first to the element's points
    at = close + 1;
  }
  return m;
}

class Writer {
 public:
  std::ostringstream out;
  double width = 0, height = 0;
  double background[3] = {1, 1, 1};

  void color(const std::string& v, bool stroke, double opacity) {
    double c[3];
    parse_color(v, c);
    for (double& x : c) x = x * opacity + background[&x - c] * (1 - opacity);
    out << num(c[0]) << ' ' << num(c[1]) << ' ' << num(c[2]) << (stroke ? " RG\n" : " rg\n");
  }
  // Opens the element's graphics state; false when it paints nothing.
  bool begin(const Paint& p, bool can_fill, bool& fill, bool& stroke) {
    double c[3];
    fill = can_fill && parse_color(p.fill, c);
    stroke = parse_color(p.stroke, c);
    if (!fill && !stroke) return false;
    const Matrix& m = p.ctm;
    out << "q " << num(m.a) << ' ' << num(m.b) << ' ' << num(m.c) << ' ' << num(m.d) << ' ' << num(m.e) << ' ' << num(m.f) << " cm\n";
    if (fill) color(p.fill, false, p.fill_opacity);
    if (stroke) {
      color(p.stroke, true, 1);
      out << num(p.stroke_width) << " w\n";
      const std::vector<double> d = numbers(p.dash);
      out << '[';
      for (double x : d) out << num(x) << ' ';
      out << "] 0 d\n";
    }
    return true;
  }
  void end(bool fill, bool stroke) { out << (fill && stroke ? "B" : fill ? "f" : "S") << "\nQ\n"; }

  void text(const Paint& p, double x, double y, const std::string& raw) {
    double c[3];
    if (!parse_color(p.fill, c)) return;
    const std::string s = latin1(unescape(raw));
    const bool bold = p.weight == "bold" || p.weight == "700";
    const double w = helvetica_width(s, p.font_size, bold);
    if (p.anchor == "middle") x -= w / 2;
    else if (p.anchor == "end") x -= w;
    const Matrix& m = p.ctm;
    out << "q " << num(m.a) << ' ' << num(m.b) << ' ' << num(m.c) << ' ' << num(m.d) << ' ' << num(m.e) << ' ' << num(m.f) << " cm\n";
    color(p.fill, false, p.fill_opacity);
    // The page is flipped (y down, as in SVG): the text matrix flips the glyphs back upright.
    out << "BT /" << (bold ? "F2" : "F1") << ' ' << num(p.font_size) << " Tf 1 0 0 -1 " << num(x) << ' ' << num(y) << " Tm (";
    for (char ch : s) {
      if (ch == '(' || ch == ')' || ch == '\\') out << '\\';
      out << ch;
    }
    out << ") Tj ET\nQ\n";
  }
};

void draw_path(Writer& w, const std::string& d) {
  double x = 0, y = 0, sx = 0, sy = 0;
  char cmd = 0;
  size_t i = 0;
  auto read = [&](double& v) {
    while (i < d.size() && (d[i] == ' ' || d[i] == ',')) ++i;
    char* end = nullptr;
    v = std::strtod(d.c_str() + i, &end);
    const size_t used = static_cast<size_t>(end - (d.c_str() + i));
    i += used;
    return used > 0;
  };
  while (i < d.size()) {
    while (i < d.size() && (d[i] == ' ' || d[i] == ',')) ++i;
    if (i >= d.size()) break;
    if (std::isalpha(static_cast<unsigned char>(d[i]))) cmd = d[i++];
    double a = 0, b = 0;
    switch (cmd) {
      case 'M': case 'm': case 'L': case 'l': {
        if (!read(a) || !read(b)) return;
        const bool rel = cmd == 'm' || cmd == 'l';
        x = rel ? x + a : a, y = rel ? y + b : b;
        const bool move = cmd == 'M' || cmd == 'm';
        if (move) sx = x, sy = y;
        w.out << num(x) << ' ' << num(y) << (move ? " m\n" : " l\n");
        if (cmd == 'M') cmd = 'L';
        if (cmd == 'm') cmd = 'l';
        break;
      }
      case 'H': case 'h':
        if (!read(a)) return;
        x = cmd == 'h' ? x + a : a;
        w.out << num(x) << ' ' << num(y) << " l\n";
        break;
      case 'V': case 'v':
        if (!read(a)) return;
        y = cmd == 'v' ? y + a : a;
        w.out << num(x) << ' ' << num(y) << " l\n";
        break;
      case 'Z': case 'z':
        w.out << "h\n";
        x = sx, y = sy;
        break;
      default: return;  // a command our exporters never write
    }
  }
}

void apply_attrs(Paint& p, const Attrs& a) {
  for (const auto& [k, v] : a) {
    if (k == "fill") p.fill = v;
    else if (k == "stroke") p.stroke = v;
    else if (k == "stroke-width") p.stroke_width = std::strtod(v.c_str(), nullptr);
    else if (k == "stroke-dasharray") p.dash = v;
    else if (k == "font-size") p.font_size = std::strtod(v.c_str(), nullptr);
    else if (k == "font-weight") p.weight = v;
    else if (k == "text-anchor") p.anchor = v;
    else if (k == "fill-opacity") p.fill_opacity *= std::strtod(v.c_str(), nullptr);
  }
  const auto t = a.find("transform");
  if (t != a.end()) p.ctm = parse_transform(t->second).then(p.ctm);
}

}  // namespace

double helvetica_width(const std::string& text, double font_size, bool bold) {
  const short* table = bold ? kHelveticaBold : kHelvetica;
  double units = 0;
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    units += u >= 32 && u <= 126 ? table[u - 32] : table['n' - 32];
  }
  return units * font_size / 1000.0;
}

std::string svg_to_pdf(const std::string& svg) {
  Writer w;
  std::vector<Paint> stack{Paint{}};
  std::vector<std::string> names;
  bool in_text = false;
  int skip = 0;  // inside <title>
  Paint text_paint;
  double text_x = 0, text_y = 0;
  std::string text_body;
  std::ostringstream& o = w.out;
  size_t i = 0;
  while (i < svg.size()) {
    if (svg[i] != '<') {
      const size_t next = svg.find('<', i);
      if (in_text && !skip) text_body += svg.substr(i, next - i);
      i = next == std::string::npos ? svg.size() : next;
      continue;
    }
    const size_t close = svg.find('>', i);
    if (close == std::string::npos) break;
    std::string tag = svg.substr(i + 1, close - i - 1);
    i = close + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (name == "title") --skip;
      if (name == "text" && in_text) {
        w.text(text_paint, text_x, text_y, text_body);
        in_text = false;
      }
      if (stack.size() > 1) stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    size_t at = tag.find_first_of(" \t\n");
    const std::string name = tag.substr(0, at);
    Attrs a;
    while (at != std::string::npos && at < tag.size()) {
      const size_t eq = tag.find('=', at);
      if (eq == std::string::npos) break;
      std::string key = tag.substr(at, eq - at);
      key.erase(0, key.find_first_not_of(" \t\n"));
      key.erase(key.find_last_not_of(" \t\n") + 1);
      const size_t q0 = tag.find_first_of("\"'", eq);
      if (q0 == std::string::npos) break;
      const size_t q1 = tag.find(tag[q0], q0 + 1);
      if (q1 == std::string::npos) break;
      a[key] = unescape(tag.substr(q0 + 1, q1 - q0 - 1));
      at = q1 + 1;
    }
    Paint p = stack.back();
    apply_attrs(p, a);
    if (name == "svg") {
      w.width = attr_num(a, "width"), w.height = attr_num(a, "height");
      if (!(w.width > 0) || !(w.height > 0)) throw std::invalid_argument("svg_to_pdf: the <svg> has no width and height in px");
      // y down as in SVG.
      o << "1 0 0 -1 0 " << num(w.height) << " cm\n";
    } else if (name == "title") {
      ++skip;
    } else if (skip) {
    } else if (name == "rect") {
      const bool full = a.count("width") && a.at("width") == "100%";
      const double rw = full ? w.width : attr_num(a, "width"), rh = full || (a.count("height") && a.at("height") == "100%") ? w.height : attr_num(a, "height");
      if (full) parse_color(p.fill, w.background);  // opacity blends against the page
      bool f = false, s = false;
      if (w.begin(p, true, f, s)) {
        o << num(attr_num(a, "x")) << ' ' << num(attr_num(a, "y")) << ' ' << num(rw) << ' ' << num(rh) << " re\n";
        w.end(f, s);
      }
    } else if (name == "line") {
      bool f = false, s = false;
      if (w.begin(p, false, f, s)) {
        o << num(attr_num(a, "x1")) << ' ' << num(attr_num(a, "y1")) << " m " << num(attr_num(a, "x2")) << ' ' << num(attr_num(a, "y2")) << " l\n";
        w.end(f, s);
      }
    } else if (name == "polyline" || name == "polygon") {
      const std::vector<double> v = numbers(a.count("points") ? a.at("points") : "");
      bool f = false, s = false;
      if (v.size() >= 2 && w.begin(p, true, f, s)) {
        for (size_t k = 0; k + 1 < v.size(); k += 2) o << num(v[k]) << ' ' << num(v[k + 1]) << (k == 0 ? " m\n" : " l\n");
        if (name == "polygon") o << "h\n";
        w.end(f, s);
      }
    } else if (name == "circle") {
      const double cx = attr_num(a, "cx"), cy = attr_num(a, "cy"), r = attr_num(a, "r"), k = 0.5523 * r;
      bool f = false, s = false;
      if (r > 0 && w.begin(p, true, f, s)) {
        o << num(cx + r) << ' ' << num(cy) << " m\n"
          << num(cx + r) << ' ' << num(cy + k) << ' ' << num(cx + k) << ' ' << num(cy + r) << ' ' << num(cx) << ' ' << num(cy + r) << " c\n"
          << num(cx - k) << ' ' << num(cy + r) << ' ' << num(cx - r) << ' ' << num(cy + k) << ' ' << num(cx - r) << ' ' << num(cy) << " c\n"
          << num(cx - r) << ' ' << num(cy - k) << ' ' << num(cx - k) << ' ' << num(cy - r) << ' ' << num(cx) << ' ' << num(cy - r) << " c\n"
          << num(cx + k) << ' ' << num(cy - r) << ' ' << num(cx + r) << ' ' << num(cy - k) << ' ' << num(cx + r) << ' ' << num(cy) << " c\nh\n";
        w.end(f, s);
      }
    } else if (name == "path") {
      bool f = false, s = false;
      if (a.count("d") && w.begin(p, true, f, s)) {
        draw_path(w, a.at("d"));
        w.end(f, s);
      }
    } else if (name == "text") {
      in_text = true;
      text_paint = p;
      text_x = attr_num(a, "x"), text_y = attr_num(a, "y");
      text_body.clear();
    }
    if (!self_closing) stack.push_back(p);
  }
  if (!(w.width > 0)) throw std::invalid_argument("svg_to_pdf: not an <svg> document");

  // The file: catalog, pages, one page, its content stream, two standard fonts; then the xref table
  // of each object's byte offset.
  const std::string content = o.str();
  std::vector<std::string> objects{
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 " + num(w.width) + " " + num(w.height) +
          "] /Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> /Contents 4 0 R >>",
      "<< /Length " + std::to_string(content.size()) + " >>\nstream\n" + content + "endstream",
      "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
      "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"};
  std::string pdf = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n";
  std::vector<size_t> offsets;
  for (size_t k = 0; k < objects.size(); ++k) {
    offsets.push_back(pdf.size());
    pdf += std::to_string(k + 1) + " 0 obj\n" + objects[k] + "\nendobj\n";
  }
  const size_t xref = pdf.size();
  pdf += "xref\n0 " + std::to_string(objects.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    char b[24];
    std::snprintf(b, sizeof b, "%010zu 00000 n \n", off);
    pdf += b;
  }
  pdf += "trailer\n<< /Size " + std::to_string(objects.size() + 1) + " /Root 1 0 R >>\nstartxref\n" + std::to_string(xref) + "\n%%EOF\n";
  return pdf;
}

}  // namespace hipstudio::viz
