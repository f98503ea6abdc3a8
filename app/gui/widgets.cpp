#include "app/gui/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "viz/colormap.h"
#include "viz/heat_image.h"
#include "viz/plot_data.h"

namespace hipstudio::gui {

std::string fmt(const char* format, ...) {
  // Any length: the scale self-test's log lines and long status messages pass 512 characters.
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  return out;
}

ImVec2 PlotArea::at(double x, double y) const {
  double tx = log_x ? (std::log(std::max(x, 1e-12)) - std::log(x0)) / (std::log(x1) - std::log(x0)) : (x - x0) / (x1 - x0);
  double ty = (y - y0) / (y1 - y0);
  return ImVec2(min.x + static_cast<float>(tx) * (max.x - min.x), max.y - static_cast<float>(ty) * (max.y - min.y));
}

double PlotArea::x_of(float px) const {
  const double t = (px - min.x) / std::max(1.0f, max.x - min.x);
  return log_x ? std::exp(std::log(x0) + t * (std::log(x1) - std::log(x0))) : x0 + t * (x1 - x0);
}

PlotArea begin_plot(const char* id, ImVec2 size, double x0, double x1, double y0, double y1, const char* x_label,
                    const char* y_label, const Theme& theme, bool log_x) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  if (size.x <= 0) size.x = ImGui::GetContentRegionAvail().x;
  ImGui::InvisibleButton(id, size);
  PlotArea p;
  p.hovered = ImGui::IsItemHovered();
  p.mouse = ImGui::GetIO().MousePos;
  const float fh = ImGui::GetFontSize();
  const float left = fh * 3.2f, bottom = fh * 2.6f, top = fh * 0.6f, right = fh * 0.8f;
  p.min = ImVec2(origin.x + left, origin.y + top);
  p.max = ImVec2(origin.x + size.x - right, origin.y + size.y - bottom);
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > y0)) y1 = y0 + 1;
  if (log_x && x0 <= 0) x0 = 1e-3;
  p.x0 = x0, p.x1 = x1, p.y0 = y0, p.y1 = y1, p.log_x = log_x;
  dl->AddRectFilled(p.min, p.max, theme.plot_bg);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  // y ticks (viz's rule and labels: the SVG exports draw the same ones)
  for (double t : viz::nice_ticks(y0, y1, 4)) {
    const ImVec2 a = p.at(x0, t);
    dl->AddLine(ImVec2(p.min.x, a.y), ImVec2(p.max.x, a.y), theme.grid);
    const std::string s = viz::tick_label(t);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(p.min.x - ts.x - 4, a.y - ts.y / 2), text, s.c_str());
  }
  // x ticks
  std::vector<double> xt;
  if (log_x) {
    xt = viz::log_ticks(x0, x1);
  } else {
    xt = viz::nice_ticks(x0, x1, std::max(2, static_cast<int>((p.max.x - p.min.x) / (fh * 5))));
  }
  for (double t : xt) {
    const ImVec2 a = p.at(t, y0);
    dl->AddLine(ImVec2(a.x, p.min.y), ImVec2(a.x, p.max.y), theme.grid);
    const std::string s = viz::tick_label(t);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(a.x - ts.x / 2, p.max.y + 2), text, s.c_str());
  }
  dl->AddRect(p.min, p.max, theme.grid);
  if (x_label && *x_label) {
    const ImVec2 ts = ImGui::CalcTextSize(x_label);
    dl->AddText(ImVec2((p.min.x + p.max.x - ts.x) / 2, p.max.y + fh * 1.3f), theme.text_dim, x_label);
  }
  if (y_label && *y_label) dl->AddText(ImVec2(p.min.x + 4, p.min.y + 2), theme.text_dim, y_label);
  dl->PushClipRect(p.min, p.max, true);
  return p;
}

void end_plot() { ImGui::GetWindowDrawList()->PopClipRect(); }

void plot_line(const PlotArea& p, const std::vector<double>& xs, const std::vector<double>& ys, uint32_t color,
               float thickness) {
  std::vector<ImVec2> pts;
  for (size_t i = 0; i < std::min(xs.size(), ys.size()); ++i)
    if (std::isfinite(ys[i])) pts.push_back(p.at(xs[i], ys[i]));
  if (pts.size() >= 2)
    ImGui::GetWindowDrawList()->AddPolyline(pts.data(), static_cast<int>(pts.size()), color, 0, thickness);
}

void plot_points(const PlotArea& p, const std::vector<double>& xs, const std::vector<double>& ys, uint32_t color,
                 float radius) {
  for (size_t i = 0; i < std::min(xs.size(), ys.size()); ++i)
    if (std::isfinite(ys[i])) ImGui::GetWindowDrawList()->AddCircleFilled(p.at(xs[i], ys[i]), radius, color);
}

void plot_bars(const PlotArea& p, const std::vector<double>& edges, const std::vector<double>& ys, uint32_t color) {
  for (size_t i = 0; i + 1 < edges.size() && i < ys.size(); ++i) {
    const ImVec2 a = p.at(edges[i], ys[i]), b = p.at(edges[i + 1], p.y0);
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(a.x, a.y), ImVec2(std::max(b.x - 1, a.x + 1), b.y), color);
  }
}

void wrap_if_needed(float width) {
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetCursorScreenPos().x + width > right && ImGui::GetCursorPosX() > ImGui::GetStyle().WindowPadding.x + 1)
    ImGui::NewLine();
}

float checkbox_width(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label, nullptr, true).x;
}

void legend_item(uint32_t color, const char* label) {
  const float s = ImGui::GetTextLineHeight() * 0.8f;
  wrap_if_needed(s + 4 + ImGui::CalcTextSize(label).x);
  const ImVec2 pos = ImGui::GetCursorScreenPos();
  const float pad = (ImGui::GetTextLineHeight() - s) / 2;
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(pos.x, pos.y + pad), ImVec2(pos.x + s, pos.y + pad + s), color, 2.0f);
  // Outline: a swatch whose colour equals the background ("future") must still show.
  ImGui::GetWindowDrawList()->AddRect(ImVec2(pos.x, pos.y + pad), ImVec2(pos.x + s, pos.y + pad + s),
                                      ImGui::GetColorU32(ImGuiCol_TextDisabled), 2.0f);
  ImGui::Dummy(ImVec2(s, ImGui::GetTextLineHeight()));
  ImGui::SameLine(0, 4);
  ImGui::TextUnformatted(label);
  ImGui::SameLine(0, 14);
}

StaleScope::StaleScope(bool stale) : stale_(stale) {
  if (stale_) ImGui::PushStyleVar(ImGuiStyleVar_Alpha, ImGui::GetStyle().Alpha * 0.45f);
}
StaleScope::~StaleScope() {
  if (stale_) ImGui::PopStyleVar();
}

void warn_text(const std::string& text, const Theme& theme) {
  if (text.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(theme.warn));
  ImGui::PushTextWrapPos(0);
  ImGui::TextUnformatted(text.c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

void empty_state(const char* message, const Theme& theme) {
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 ts = ImGui::CalcTextSize(message, nullptr, false, avail.x * 0.8f);
  ImGui::SetCursorPos(ImVec2(ImGui::GetCursorPosX() + std::max(0.0f, (avail.x - ts.x) / 2),
                             ImGui::GetCursorPosY() + std::max(0.0f, (avail.y - ts.y) / 3)));
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(theme.text_dim));
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + avail.x * 0.8f);
  ImGui::TextUnformatted(message);
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

bool vertical_splitter(const char* id, float* position, float min_pos, float max_pos, float height) {
  const float w = 6.0f;
  ImGui::InvisibleButton(id, ImVec2(w, height));
  const bool active = ImGui::IsItemActive();
  if (ImGui::IsItemHovered() || active) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeEW);
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(a.x + 2, a.y), ImVec2(b.x - 2, b.y),
                                            ImGui::GetColorU32(active ? ImGuiCol_SeparatorActive
                                                                      : ImGui::IsItemHovered() ? ImGuiCol_SeparatorHovered
                                                                                               : ImGuiCol_Separator));
  if (active) *position = std::clamp(*position + ImGui::GetIO().MouseDelta.x, min_pos, max_pos);
  return active;
}

void side_tooltip(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  // Inside the screen: a tooltip of an item near the bottom is lifted so that all of it shows.
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImVec2 ts = ImGui::CalcTextSize(buf);
  const ImVec2 pad = ImGui::GetStyle().WindowPadding;
  const float bottom = vp->WorkPos.y + vp->WorkSize.y - ts.y - pad.y * 2;
  const float right = vp->WorkPos.x + vp->WorkSize.x - ts.x - pad.x * 2;
  ImGui::SetNextWindowPos(ImVec2(std::max(vp->WorkPos.x, std::min(ImGui::GetWindowPos().x + ImGui::GetWindowWidth() + 6, right)),
                                 std::max(vp->WorkPos.y, std::min(ImGui::GetItemRectMin().y, bottom))));
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(buf);
  ImGui::EndTooltip();
}

std::string token_text(const std::string& piece) {
  if (piece == "\n" || piece == "<0x0A>") return "\\n";
  std::string t;
  for (char c : piece) t += c == '\n' ? std::string("\\n") : std::string(1, c);
  return t.empty() ? std::string(" ") : t;
}

TokenFlow TokenFlowView::draw(const void* source, int64_t count, const std::function<std::string(int64_t)>& label,
                              const std::function<uint32_t(int64_t)>& background, int64_t outline, const Theme& theme,
                              const std::function<uint32_t(int64_t)>& text_color) {
  TokenFlow out;
  const float wrap = std::max(1.0f, ImGui::GetContentRegionAvail().x);
  const float font = ImGui::GetFontSize();
  const ImVec2 start = ImGui::GetCursorScreenPos();
  const float lh = ImGui::GetTextLineHeightWithSpacing();
  if (source != source_ || count != count_ || wrap != width_ || font != font_) {
    source_ = source, count_ = count, width_ = wrap, font_ = font;
    const size_t n = static_cast<size_t>(std::max<int64_t>(0, count));
    x_.assign(n, 0), w_.assign(n, 0), line_.assign(n, 0);
    float x = 0;
    int32_t line = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string tok = label(static_cast<int64_t>(i));
      const float tw = ImGui::CalcTextSize(tok.c_str()).x;
      if (x + tw > wrap && x > 0) x = 0, ++line;
      x_[i] = x, w_[i] = tw, line_[i] = line;
      x += tw;
      if (tok == "\\n") x = 0, ++line;
    }
    const size_t lines = n ? static_cast<size_t>(line_.back()) + 1 : 0;
    line_start_.assign(lines + 1, static_cast<int64_t>(n));
    for (size_t i = n; i-- > 0;) line_start_[static_cast<size_t>(line_[i])] = static_cast<int64_t>(i);
  }
  const int64_t lines = static_cast<int64_t>(line_start_.size()) - 1;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  // The lines inside the clip rectangle (the child's visible part), one more on each side.
  const int64_t first = std::clamp<int64_t>(static_cast<int64_t>(std::floor((dl->GetClipRectMin().y - start.y) / lh)) - 1, 0, lines);
  const int64_t last = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((dl->GetClipRectMax().y - start.y) / lh)) + 1, first, lines);
  const bool window_hovered = ImGui::IsWindowHovered();
  const ImU32 default_text = ImGui::GetColorU32(ImGuiCol_Text);
  for (int64_t ln = first; ln < last; ++ln) {
    for (int64_t i = line_start_[static_cast<size_t>(ln)]; i < line_start_[static_cast<size_t>(ln) + 1]; ++i) {
      const size_t k = static_cast<size_t>(i);
      const ImVec2 p(start.x + x_[k], start.y + static_cast<float>(ln) * lh), q(p.x + w_[k], p.y + ImGui::GetTextLineHeight());
      const uint32_t bg = background(i);
      if (bg) dl->AddRectFilled(p, q, bg);
      const std::string tok = label(i);
      dl->AddText(p, text_color ? text_color(i) : default_text, tok.c_str());
      if (i == outline) dl->AddRect(ImVec2(p.x - 1, p.y - 1), ImVec2(q.x + 1, q.y + 1), theme.accent, 0, 0, 2.0f);
      if (window_hovered && ImGui::IsMouseHoveringRect(p, q)) {
        out.hovered = i;
        out.clicked = ImGui::IsMouseClicked(0);
      }
    }
  }
  lines_drawn_ = last - first;
  ImGui::Dummy(ImVec2(wrap, static_cast<float>(std::max<int64_t>(1, lines)) * lh));
  return out;
}

void WrappedText::draw(const std::string& text) {
  const float width = std::max(1.0f, ImGui::GetContentRegionAvail().x);
  const float font = ImGui::GetFontSize();
  if (text != text_ || width != width_ || font != font_) {
    text_ = text, width_ = width, font_ = font;
    lines_.clear();
    const ImFont* f = ImGui::GetFont();
    const float scale = font / f->FontSize;
    const char* b = text_.data();
    const char* e = b + text_.size();
    // Paragraph by paragraph: CalcWordWrapPositionA reads a newline as a blank, not as a break.
    for (const char* para = b; para <= e;) {
      const char* nl = static_cast<const char*>(std::memchr(para, '\n', static_cast<size_t>(e - para)));
      const char* pe = nl ? nl : e;
      if (para == pe) lines_.emplace_back(para - b, para - b);
      for (const char* s = para; s < pe;) {
        const char* eol = f->CalcWordWrapPositionA(scale, s, pe, width);
        if (eol <= s) {  // not one character fits: take one (a whole UTF-8 sequence) anyway
          eol = s + 1;
          while (eol < pe && (static_cast<unsigned char>(*eol) & 0xC0) == 0x80) ++eol;
        }
        lines_.emplace_back(s - b, eol - b);
        s = eol;
        while (s < pe && (*s == ' ' || *s == '\t')) ++s;  // the blanks a wrap consumes
      }
      if (!nl) break;
      para = nl + 1;
    }
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(lines_.size()), ImGui::GetTextLineHeightWithSpacing());
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const auto& [lb, le] = lines_[static_cast<size_t>(i)];
      if (lb == le) {
        ImGui::TextUnformatted(" ");
      } else {
        ImGui::TextUnformatted(text_.data() + lb, text_.data() + le);
      }
    }
  clipper.End();
}

void fit_next_window(ImVec2 size, ImGuiCond cond) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImVec2 room = vp->WorkSize;
  ImGui::SetNextWindowSize(ImVec2(std::min(size.x, room.x), std::min(size.y, room.y)), cond);
  ImGui::SetNextWindowPos(vp->GetWorkCenter(), cond, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), room);
}

void keep_window_inside_viewport() {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  const ImVec2 fit(std::min(size.x, vp->WorkSize.x), std::min(size.y, vp->WorkSize.y));
  if (fit.x != size.x || fit.y != size.y) ImGui::SetWindowSize(fit);
  const ImVec2 to(std::clamp(pos.x, vp->WorkPos.x, vp->WorkPos.x + vp->WorkSize.x - fit.x),
                  std::clamp(pos.y, vp->WorkPos.y, vp->WorkPos.y + vp->WorkSize.y - fit.y));
  if (to.x != pos.x || to.y != pos.y) ImGui::SetWindowPos(to);
}

float outside_viewport(ImVec2 min, ImVec2 max) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImVec2 lo = vp->WorkPos, hi(vp->WorkPos.x + vp->WorkSize.x, vp->WorkPos.y + vp->WorkSize.y);
  return std::max({0.0f, lo.x - min.x, lo.y - min.y, max.x - hi.x, max.y - hi.y});
}

void colorbar_log(const char* id, float width, float height, double lo, double hi, const char* label, const Theme& theme) {
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, ImVec2(width, height));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float fh = ImGui::GetFontSize();
  const float bar_w = std::min(width * 0.3f, fh * 0.9f), top = o.y + fh * 1.2f, bottom = o.y + height - fh * 0.5f;
  dl->AddText(o, theme.text_dim, label);
  const int steps = 64;
  for (int k = 0; k < steps; ++k) {
    const float y0 = bottom - (bottom - top) * static_cast<float>(k + 1) / steps, y1 = bottom - (bottom - top) * static_cast<float>(k) / steps;
    dl->AddRectFilled(ImVec2(o.x, y0), ImVec2(o.x + bar_w, y1), viz::pack_rgba(viz::colormap(viz::ColorMapKind::Magma, (k + 0.5) / steps)));
  }
  dl->AddRect(ImVec2(o.x, top), ImVec2(o.x + bar_w, bottom), theme.grid);
  for (double t : viz::log_ticks(lo, hi)) {
    const float y = bottom - (bottom - top) * static_cast<float>(viz::log_scale_position(t, lo, hi));
    dl->AddLine(ImVec2(o.x + bar_w, y), ImVec2(o.x + bar_w + 4, y), ImGui::GetColorU32(ImGuiCol_Text));
    const std::string s = t >= 0.01 ? viz::tick_label(t) : fmt("1e%d", static_cast<int>(std::lround(std::log10(t))));
    dl->AddText(ImVec2(o.x + bar_w + 6, y - fh / 2), ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
  }
}

}  // namespace hipstudio::gui
