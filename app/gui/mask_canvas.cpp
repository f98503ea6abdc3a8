#include "app/gui/mask_canvas.h"

#include <algorithm>
#include <cmath>

#include "app/gui/widgets.h"
#include "viz/plot_data.h"

namespace hipstudio::gui {

std::string token_label(const AnalysisView& a, int64_t i) {
  if (i < 0 || i >= static_cast<int64_t>(a.prompt_tokens.size())) return "?";
  std::string t;
  for (char c : a.prompt_tokens[static_cast<size_t>(i)]) {
    if (c == '\n') {
      t += "\\n";
    } else {
      t += c;
    }
  }
  if (t.size() > 24) t = t.substr(0, 24) + "...";
  return "'" + t + "'";
}

namespace {

uint32_t palette_hash(const viz::MaskPalette& p) {
  return (p.show_oracle ? 1u : 0u) | (p.show_random ? 2u : 0u) | (p.show_sink_dense ? 4u : 0u) | (p.empty << 3);
}

// `who`: the method whose mask is drawn in HiP's slot ("HiP", or another registry method's name).
std::string outcome_text(uint8_t f, const std::string& who) {
  if (f & viz::kMaskHit) return who + " + oracle (hit)";
  if (f & viz::kMaskFalsePick) return who + " only (false pick)";
  if (f & viz::kMaskMiss) return "oracle only (" + who + " missed it)";
  return "not selected";
}

}  // namespace

void zoom_pan(MaskViewState& view, int64_t T, ImVec2 p0, float side, bool hovered, bool active, bool& dragging) {
  view.follow_tokens(T);
  const double min_span = std::min<double>(static_cast<double>(T), 8.0);
  if (view.span <= 0 || view.span >= T) view.span = static_cast<double>(T), view.zoomed = false;
  view.span = std::max(view.span, min_span);
  const ImGuiIO& io = ImGui::GetIO();
  const double cells_per_px = view.span / side;
  if (hovered && io.MouseWheel != 0) {
    const double mx = view.x0 + (io.MousePos.x - p0.x) * cells_per_px;
    const double my = view.y0 + (io.MousePos.y - p0.y) * cells_per_px;
    const double ns = std::clamp(view.span * std::pow(0.8, io.MouseWheel), min_span, static_cast<double>(T));
    view.x0 = mx - (mx - view.x0) * ns / view.span;
    view.y0 = my - (my - view.y0) * ns / view.span;
    view.span = ns;
    view.zoomed = ns < static_cast<double>(T);
  }
  if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    dragging = true;
    if (view.span < static_cast<double>(T)) view.zoomed = true;  // a drag of the fitted view moves nothing
    view.x0 -= io.MouseDelta.x * cells_per_px;
    view.y0 -= io.MouseDelta.y * cells_per_px;
  }
  view.x0 = std::clamp(view.x0, 0.0, static_cast<double>(T) - view.span);
  view.y0 = std::clamp(view.y0, 0.0, static_cast<double>(T) - view.span);
}

void draw_cell_axes(const MaskViewState& view, ImVec2 origin, ImVec2 p0, float side, const Theme& theme) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float fh = ImGui::GetFontSize();
  const double px_per_cell = side / view.span;
  auto sx = [&](double c) { return p0.x + static_cast<float>((c - view.x0) * px_per_cell); };
  auto sy = [&](double r) { return p0.y + static_cast<float>((r - view.y0) * px_per_cell); };
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  for (double t : viz::cell_ticks(std::ceil(view.x0), view.x0 + view.span - 1, std::max(2, static_cast<int>(side / (fh * 4))))) {
    const float x = sx(t + 0.5);
    const std::string s = viz::tick_label(t);
    dl->AddLine(ImVec2(x, p0.y - 3), ImVec2(x, p0.y), theme.grid);
    dl->AddText(ImVec2(x - ImGui::CalcTextSize(s.c_str()).x / 2, origin.y), text, s.c_str());
  }
  for (double t : viz::cell_ticks(std::ceil(view.y0), view.y0 + view.span - 1, std::max(2, static_cast<int>(side / (fh * 3))))) {
    const float y = sy(t + 0.5);
    const std::string s = viz::tick_label(t);
    dl->AddLine(ImVec2(p0.x - 3, y), ImVec2(p0.x, y), theme.grid);
    dl->AddText(ImVec2(p0.x - 5 - ImGui::CalcTextSize(s.c_str()).x, y - fh / 2), text, s.c_str());
  }
}

MaskCanvasEvents MaskCanvas::draw(const char* id, const std::shared_ptr<const LayerMaskSnapshot>& masks_ptr,
                                  const AnalysisView& a, int64_t head,
                                  MaskViewState& view, float size, bool interactive, int64_t selected_qb,
                                  const Theme& theme) {
  MaskCanvasEvents ev;
  const LayerMaskSnapshot& masks = *masks_ptr;
  const hip::AttentionInputs in = a.inputs_or_shape(masks.layer);
  const bool probe = a.host_ready(masks.layer);  // hover values read the layer on the host
  const int64_t T = in.tk;
  if (picture_outdated(masks_ptr, head)) {
    picture_ = dense_ ? viz::make_dense_picture(in.tq, in.tk, masks.params)
                      : viz::make_mask_picture(masks.hip, masks.has_oracle ? &masks.oracle : nullptr,
                                               masks.has_oracle ? &masks.random : nullptr, head, in.tq, in.tk, masks.params);
    picture_source_ = masks_ptr;
    picture_head_ = head;
    picture_dense_ = dense_;
    key_ = Key{};  // the texture shows the old picture
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float fh = ImGui::GetFontSize();
  const float left = fh * 2.8f, top = fh * 1.3f;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float side = std::max(32.0f, size - std::max(left, top));
  const ImVec2 p0(origin.x + left, origin.y + top), p1(p0.x + side, p0.y + side);
  ImGui::InvisibleButton(id, ImVec2(left + side, top + side));
  const bool hovered = ImGui::IsItemHovered();

  zoom_pan(view, T, p0, side, interactive && hovered, interactive && ImGui::IsItemActive(), dragging_);
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsItemDeactivated()) {
    if (!dragging_ && hovered) {
      ev.clicked = true;
      const int64_t q = static_cast<int64_t>(view.y0 + (io.MousePos.y - p0.y) * view.span / side);
      if (interactive && q >= 0 && q < in.tq) ev.clicked_query = q;
    }
    dragging_ = false;
  }

  // Visible cells and the pooled texture.
  const double px_per_cell = side / view.span;
  Key key;
  key.masks = &masks;
  key.head = head;
  key.c0 = static_cast<int64_t>(std::floor(view.x0));
  key.c1 = std::min<int64_t>(T, static_cast<int64_t>(std::ceil(view.x0 + view.span)));
  key.r0 = static_cast<int64_t>(std::floor(view.y0));
  key.r1 = std::min<int64_t>(in.tq, static_cast<int64_t>(std::ceil(view.y0 + view.span)));
  key.w = static_cast<int>(std::clamp<double>(std::ceil((key.c1 - key.c0) * px_per_cell), 1.0, static_cast<double>(key.c1 - key.c0)));
  key.h = static_cast<int>(std::clamp<double>(std::ceil((key.r1 - key.r0) * px_per_cell), 1.0, static_cast<double>(key.r1 - key.r0)));
  key.palette = palette_hash(theme.mask) ^ (view.show_oracle ? 0 : 1u << 29) ^ (view.show_random ? 1u << 30 : 0) ^
                (view.show_sink_dense ? 0 : 1u << 31);
  if (!(key == key_) || !tex_.valid()) {
    viz::PoolRect rect{key.r0, key.r1, key.c0, key.c1, key.w, key.h};
    flags_ = viz::pool_mask_flags(picture_, rect);
    viz::MaskPalette pal = theme.mask;
    pal.show_oracle = view.show_oracle && masks.has_oracle;
    pal.show_random = view.show_random;
    pal.show_sink_dense = view.show_sink_dense;
    // A dense layer's keys are all "dense" cells: drawn in the dense-layer colour, not the dense
    // tail's, so the two read apart (the legend has both).
    if (picture_dense_) pal.dense = pal.dense_layer, pal.show_sink_dense = true;
    viz::colorize_mask(flags_, pal, rgba_);
    tex_.upload(rgba_.data(), key.w, key.h);
    key_ = key;
  }
  auto sx = [&](double c) { return p0.x + static_cast<float>((c - view.x0) * px_per_cell); };
  auto sy = [&](double r) { return p0.y + static_cast<float>((r - view.y0) * px_per_cell); };
  // No background fill: the texture covers the whole square (one full-area layer less to rasterise).
  dl->PushClipRect(p0, p1, true);
  dl->AddImage(tex_.id(), ImVec2(sx(static_cast<double>(key.c0)), sy(static_cast<double>(key.r0))),
               ImVec2(sx(static_cast<double>(key.c1)), sy(static_cast<double>(key.r1))), ImVec2(0, 0), ImVec2(1, 1),
               ImGui::GetColorU32(IM_COL32_WHITE));  // the style's alpha: a stale result greys as its text does
  if (selected_qb >= 0) {
    const double a0 = static_cast<double>(selected_qb * masks.params.b_q);
    const double a1 = std::min<double>(static_cast<double>(in.tq), a0 + static_cast<double>(masks.params.b_q));
    dl->AddRect(ImVec2(p0.x - 2, sy(a0) - 1), ImVec2(p1.x + 2, sy(a1) + 1), theme.accent, 0, 0, 2.0f);
  }
  if (cursor_q_ >= 0 && cursor_k_ >= 0) {  // the linked view's shared cursor
    const float cx = sx(static_cast<double>(cursor_k_) + 0.5), cy = sy(static_cast<double>(cursor_q_) + 0.5);
    dl->AddLine(ImVec2(p0.x, cy), ImVec2(p1.x, cy), theme.accent, 1.0f);
    dl->AddLine(ImVec2(cx, p0.y), ImVec2(cx, p1.y), theme.accent, 1.0f);
  }
  dl->PopClipRect();
  dl->AddRect(p0, p1, theme.grid);

  draw_cell_axes(view, origin, p0, side, theme);

  // Hover readout.
  if (hovered && io.MousePos.x >= p0.x && io.MousePos.y >= p0.y) {
    const auto j = static_cast<int64_t>(view.x0 + (io.MousePos.x - p0.x) / px_per_cell);
    const auto i = static_cast<int64_t>(view.y0 + (io.MousePos.y - p0.y) / px_per_cell);
    if (i >= 0 && i < in.tq && j >= 0 && j < T) {
      ev.hovered_query = i;
      ev.hovered_key = j;
      if (interactive) {
        const uint8_t f = viz::mask_cell_flags(picture_, i, j);
        const ProbeValue pv = probe ? probe_.at(in, masks.math, head, i, j) : ProbeValue{};
        ImGui::BeginTooltip();
        ImGui::Text("query %lld %s  (block %lld)", static_cast<long long>(i), token_label(a, i).c_str(),
                    static_cast<long long>(i / masks.params.b_q));
        ImGui::Text("key   %lld %s  (block %lld)", static_cast<long long>(j), token_label(a, j).c_str(),
                    static_cast<long long>(j / masks.params.b_k));
        if (!probe && j <= i) {
          ImGui::TextDisabled("score and probability after the layer's host copy (made in the background)");
        } else if (!pv.visible) {
          ImGui::TextDisabled("future key: masked by causality");
        } else {
          ImGui::Text("score q.k/sqrt(d) %.3f   dense probability %.4f", pv.score, pv.probability);
          if (f & viz::kMaskSink) ImGui::TextUnformatted("sink: always attended");
          if (f & viz::kMaskDense) ImGui::TextUnformatted("dense tail (the diagonal block and the sliding window): always attended");
          if (dense_) {
            ImGui::TextUnformatted("this layer runs dense: every visible key is attended");
          } else {
            ImGui::Text("selection: %s", outcome_text(f, masks.method == "hip" ? std::string("HiP") : masks.method).c_str());
          }
          if (masks.has_oracle) {
            const int64_t qb = i / masks.params.b_q;
            ImGui::Text("query block %lld: recall %.3f vs oracle (random %.3f)", static_cast<long long>(qb),
                        masks.recall[static_cast<size_t>(masks.hip.index(head, qb))],
                        masks.random_recall[static_cast<size_t>(masks.hip.index(head, qb))]);
          }
          // What the random baseline (kernels/random_baseline.h: HiP's budget of key blocks, drawn
          // uniformly from the same search range) picked for this query block, and this cell's part in it.
          const int64_t rqb = i / masks.params.b_q;
          if (view.show_random && rqb < masks.random.query_blocks && head < masks.random.heads) {
            const long long picked = masks.random.count(head, rqb);
            const char* cell = !(f & viz::kMaskRandom) ? "not this key block"
                               : (f & viz::kMaskHip)   ? "this key block, as HiP did"
                                                       : "this key block, which HiP did not";
            ImGui::Text("random baseline: %lld key blocks for query block %lld (HiP's budget, uniform), %s", picked,
                        static_cast<long long>(rqb), cell);
          }
        }
        ImGui::TextDisabled("wheel: zoom   drag: pan   click: pick this query block");
        ImGui::EndTooltip();
      }
    }
  }
  return ev;
}

}  // namespace hipstudio::gui
