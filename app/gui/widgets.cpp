#include "app/gui/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

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
  ImGui::SetNextWindowPos(ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowWidth() + 6, ImGui::GetItemRectMin().y));
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

TokenFlow token_flow(int64_t count, const std::function<std::string(int64_t)>& label, const std::function<uint32_t(int64_t)>& background,
                     int64_t outline, const Theme& theme, const std::function<uint32_t(int64_t)>& text_color) {
  TokenFlow out;
  const float wrap = ImGui::GetContentRegionAvail().x;
  const ImVec2 start = ImGui::GetCursorScreenPos();
  const float lh = ImGui::GetTextLineHeightWithSpacing();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  float x = 0, y = 0;
  for (int64_t i = 0; i < count; ++i) {
    const std::string tok = label(i);
    const ImVec2 ts = ImGui::CalcTextSize(tok.c_str());
    if (x + ts.x > wrap && x > 0) x = 0, y += lh;
    const ImVec2 p(start.x + x, start.y + y), q(p.x + ts.x, p.y + ts.y);
    const uint32_t bg = background(i);
    if (bg) dl->AddRectFilled(p, q, bg);
    dl->AddText(p, text_color ? text_color(i) : ImGui::GetColorU32(ImGuiCol_Text), tok.c_str());
    if (i == outline) dl->AddRect(ImVec2(p.x - 1, p.y - 1), ImVec2(q.x + 1, q.y + 1), theme.accent, 0, 0, 2.0f);
    if (ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(p, q)) {
      out.hovered = i;
      out.clicked = ImGui::IsMouseClicked(0);
    }
    x += ts.x;
    if (tok == "\\n") x = 0, y += lh;
  }
  ImGui::Dummy(ImVec2(wrap, y + lh));
  return out;
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
