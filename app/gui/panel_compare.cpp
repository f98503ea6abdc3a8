// Side by side: any two of the dense probabilities, the oracle and the registry's methods for the
// same layer and head (dense | HiP by default), linked: one zoom and pan, one hover cursor; every
// compared method's mask of the viewed head as small multiples under them (method_multiples.h);
// the per-head quality of every layer as a heat map (click to jump); perplexity and KL; the prompt
// coloured by how much worse (red) or better (blue) HiP predicts each token than dense attention.
// The methods' masks come from the worker's method masks stage (computed once per method, layer
// and run): picking another method only re-draws.
#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "captures/layer_kinds.h"
#include "app/gui/mask_canvas.h"
#include "app/gui/method_multiples.h"
#include "app/gui/panel.h"
#include "app/gui/quality_grid.h"
#include "app/gui/widgets.h"
#include "viz/colormap.h"
#include "viz/heat_image.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::gui {

namespace {


class ComparePanel final : public Panel {
 public:
  const char* id() const override { return "compare"; }
  const char* title() const override { return "Side by side"; }
  PaneSlot default_slot() const override { return PaneSlot::Left; }

  void draw(PanelContext& ctx) override {
    const Theme& t = ctx.theme;
    const auto& a = ctx.snap.analysis;
    if (!a) {
      empty_state("No analysis yet: load a model and a prompt.", t);
      return;
    }
    const PairedAnalysis& pa = *a->analysis;
    StaleScope grey(view_stale(ctx, kStageAnalysis));
    if (a->model.synthetic) {
      ImGui::TextDisabled("Synthetic Q/K: no model, so no perplexity or per-head table.");
    } else if (pa.hip_partial()) {
      ImGui::TextWrapped("Perplexity, KL and top-1 agreement: after the HiP layers above layer %lld (running now; the "
                         "viewed layer's results came first)", static_cast<long long>(pa.hip_through_layer));
    } else {
      ImGui::TextWrapped("Perplexity: dense %.3f, HiP %.3f (%+.2f%%)   KL(dense||HiP) %.4f nats/token   top-1 agreement %.1f%%",
                  pa.dense.ppl, pa.hip.ppl, (pa.hip.ppl / pa.dense.ppl - 1) * 100, pa.kl, pa.top1_agreement * 100);
    }
    side_picker("##compare_left", ctx.state.compare_left);
    ImGui::SameLine();
    ImGui::TextUnformatted("|");
    ImGui::SameLine();
    side_picker("##compare_right", ctx.state.compare_right);
    ImGui::SameLine();
    ImGui::Checkbox("Stacked (larger images)", &stacked_);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("One image above the other, each as wide as the pane; still linked.");
    const float avail = ImGui::GetContentRegionAvail().x;
    const float bar = ImGui::GetFontSize() * 4.5f;
    const float img = stacked_ ? std::min(avail - bar, ImGui::GetContentRegionAvail().y * 0.5f)
                               : std::min((avail - ImGui::GetStyle().ItemSpacing.x * 2) / 2, ImGui::GetContentRegionAvail().y * 0.55f);
    draw_images(ctx, img);
    multiples_.draw(ctx);
    if (!a->model.synthetic) {
      draw_heat_map(ctx, *a);
      if (!pa.hip_partial()) draw_nll_text(ctx, *a);
    }
  }

 private:
  // One side's picker: the dense probabilities or a registry method (the oracle and the random
  // baseline among them), each with its citation and rule as the tooltip.
  static void side_picker(const char* id, std::string& choice) {
    namespace hm = hip::methods;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
    if (!ImGui::BeginCombo(id, choice.c_str())) return;
    if (ImGui::Selectable(kCompareDense, choice == kCompareDense)) choice = kCompareDense;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("dense softmax probabilities (log colour)");
    for (const hm::SelectionMethod* m : hm::selection_methods()) {
      if (ImGui::Selectable(m->name.c_str(), choice == m->name)) choice = m->name;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n%s\n%s", m->title.c_str(), m->citation.c_str(), m->rule.c_str());
    }
    ImGui::EndCombo();
  }

  // The two sides of the same layer and head, linked: one zoom / pan (s.mask_view, shared with the
  // mask view and the small multiples), one hover cursor drawn on both, axes on both; a dense side
  // on a log colour scale with its colorbar (a linear one leaves it nearly black).
  void draw_images(PanelContext& ctx, float size) {
    const Theme& t = ctx.theme;
    AppState& s = ctx.state;
    const auto& d = ctx.snap.dense;
    const float fh = ImGui::GetFontSize();
    const float bar_w = fh * 4.5f;
    size = std::max(64.0f, size - bar_w / 2);
    int64_t hover_q = -1, hover_k = -1;
    const bool bar = d && !d->probs.values.empty() && (s.compare_left == kCompareDense || s.compare_right == kCompareDense);
    for (int side = 0; side < 2; ++side) {
      const std::string& choice = side == 0 ? s.compare_left : s.compare_right;
      if (side == 1 && !stacked_) ImGui::SameLine();
      ImGui::BeginGroup();
      ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + size);
      ImGui::PushID(side);
      if (choice == kCompareDense) draw_dense(ctx, size, hover_q, hover_k);
      else draw_method(ctx, choice, canvas_[side], size, hover_q, hover_k);
      ImGui::PopID();
      ImGui::PopTextWrapPos();
      ImGui::EndGroup();
      // The colorbar beside the image it explains (stacked), else after both.
      if (bar && (stacked_ ? choice == kCompareDense : side == 1)) {
        ImGui::SameLine();
        colorbar_log("##dense_bar", bar_w, size, scale_lo_, scale_hi_, "p (dense)", t);
      }
    }
    cursor_q_ = hover_q, cursor_k_ = hover_k;  // drawn on both images next frame
  }

  void draw_dense(PanelContext& ctx, float size, int64_t& hover_q, int64_t& hover_k) {
    const Theme& t = ctx.theme;
    AppState& s = ctx.state;
    const auto& d = ctx.snap.dense;
    const float fh = ImGui::GetFontSize();
    if (d && d->probs.values.empty()) {
      ImGui::TextWrapped("Dense probabilities skipped above %lld tokens (O(T^2) per head).", static_cast<long long>(kOracleMaxTokens));
    } else if (d && ctx.snap.analysis && ctx.snap.analysis->has_inputs(d->layer)) {
      StaleScope grey(view_stale(ctx, kStageDense));
      ImGui::TextWrapped("Dense softmax probabilities, layer %lld head %lld (log colour; %s)", static_cast<long long>(d->layer),
                         static_cast<long long>(d->head), d->source.c_str());
      const AnalysisView& a = *ctx.snap.analysis;
      const hip::AttentionInputs in = a.inputs_or_shape(d->layer);
      const bool probe = a.host_ready(d->layer);  // hover values read the layer on the host
      // Log scale from 1e-4 of the largest probability up to it.
      scale_hi_ = std::max(1e-6, static_cast<double>(d->max_prob));
      scale_lo_ = scale_hi_ * 1e-4;
      if (dense_src_ != d || dense_dark_ != t.dark) {
        std::vector<uint32_t> rgba;
        viz::colorize_heat_log(d->probs, viz::ColorMapKind::Magma, static_cast<float>(scale_lo_), static_cast<float>(scale_hi_), t.mask.future, rgba);
        dense_tex_.upload(rgba.data(), static_cast<int>(d->probs.cols), static_cast<int>(d->probs.rows));
        dense_src_ = d;
        dense_dark_ = t.dark;
      }
      const ImVec2 origin = ImGui::GetCursorScreenPos();
      const float left = fh * 2.8f, top = fh * 1.3f;
      const float side = std::max(32.0f, size - std::max(left, top));
      const ImVec2 p0(origin.x + left, origin.y + top), p1(p0.x + side, p0.y + side);
      ImGui::InvisibleButton("##dense", ImVec2(left + side, top + side));
      const bool hovered = ImGui::IsItemHovered();
      MaskViewState& v = s.mask_view;
      zoom_pan(v, in.tk, p0, side, hovered, ImGui::IsItemActive(), dense_dragging_);
      if (ImGui::IsItemDeactivated()) dense_dragging_ = false;
      const float T = static_cast<float>(in.tk);
      ImDrawList* dl = ImGui::GetWindowDrawList();
      dl->AddImage(dense_tex_.id(), p0, p1, ImVec2(static_cast<float>(v.x0) / T, static_cast<float>(v.y0) / T),
                   ImVec2(static_cast<float>(v.x0 + v.span) / T, static_cast<float>(v.y0 + v.span) / T),
                   ImGui::GetColorU32(IM_COL32_WHITE));  // style alpha: greyed when stale
      dl->AddRect(p0, p1, t.grid);
      draw_cell_axes(v, origin, p0, side, t);
      const double px_per_cell = side / v.span;
      if (cursor_q_ >= 0 && cursor_k_ >= 0) {
        const float cx = p0.x + static_cast<float>((static_cast<double>(cursor_k_) + 0.5 - v.x0) * px_per_cell);
        const float cy = p0.y + static_cast<float>((static_cast<double>(cursor_q_) + 0.5 - v.y0) * px_per_cell);
        dl->PushClipRect(p0, p1, true);
        dl->AddLine(ImVec2(p0.x, cy), ImVec2(p1.x, cy), t.accent, 1.0f);
        dl->AddLine(ImVec2(cx, p0.y), ImVec2(cx, p1.y), t.accent, 1.0f);
        dl->PopClipRect();
      }
      const ImVec2 mp = ImGui::GetIO().MousePos;
      if (hovered && mp.x >= p0.x && mp.y >= p0.y) {
        const auto i = static_cast<int64_t>(v.y0 + (mp.y - p0.y) / px_per_cell);
        const auto j = static_cast<int64_t>(v.x0 + (mp.x - p0.x) / px_per_cell);
        hover_q = i, hover_k = j;
        const ProbeValue pv = probe ? probe_.at(in, a.layer_math(d->layer), d->head, i, j) : ProbeValue{};
        ImGui::BeginTooltip();
        ImGui::Text("query %lld %s, key %lld %s", static_cast<long long>(i), token_label(a, i).c_str(), static_cast<long long>(j),
                    token_label(a, j).c_str());
        if (pv.visible) {
          ImGui::Text("dense probability %.5f (score %.3f)", pv.probability, pv.score);
        } else if (!probe) {
          ImGui::TextDisabled("values after the layer's host copy (made in the background)");
        } else {
          ImGui::TextDisabled("future key (causal mask)");
        }
        ImGui::TextDisabled("wheel: zoom both   drag: pan both");
        ImGui::EndTooltip();
      }
    } else {
      ImGui::TextDisabled("Dense probabilities: computing...");
    }
  }

  // A method's mask of the viewed layer and head against the layer's oracle: HiP's from the layer
  // views (the mask view's own), every other method's from the method masks stage.
  void draw_method(PanelContext& ctx, const std::string& name, MaskCanvas& canvas, float size, int64_t& hover_q,
                   int64_t& hover_k) {
    AppState& s = ctx.state;
    const auto& own = ctx.snap.masks;
    std::shared_ptr<const LayerMaskSnapshot> m;
    bool stale = false;
    std::string why;
    if (name == "hip" && own && own->method == "hip") {
      m = own;
      stale = view_stale(ctx, kStageMasks);
    } else if (const MethodMaskView* v = ctx.snap.method_masks ? ctx.snap.method_masks->find(name) : nullptr) {
      m = v->masks;
      why = v->error;
      stale = !method_mask_current(ctx, *v);
    }
    if (!m || !m->source) {
      if (!why.empty()) warn_text(name + ": " + why, ctx.theme);
      else ImGui::TextDisabled("%s mask: %s", name.c_str(), method_mask_pending_text(ctx).c_str());
      return;
    }
    StaleScope grey(stale);
    const captures::LayerKinds kinds = captures::layer_kinds(*m->source->analysis);
    const int64_t head = std::min<int64_t>(s.head, m->hip.heads - 1);
    const double recall = head_recall(*m, head);
    if (std::isfinite(recall))
      ImGui::TextWrapped("%s mask, layer %lld (%s) head %lld, recall %.3f", method_title(name).c_str(),
                         static_cast<long long>(m->layer), kinds.short_text(m->layer).c_str(), static_cast<long long>(head), recall);
    else
      ImGui::TextWrapped("%s mask, layer %lld (%s) head %lld (no oracle at this length)", method_title(name).c_str(),
                         static_cast<long long>(m->layer), kinds.short_text(m->layer).c_str(), static_cast<long long>(head));
    canvas.set_cursor(cursor_q_, cursor_k_);
    // A dense layer (l < l_d) runs dense whatever the method; HiP's side shows it as the mask view does.
    canvas.set_dense(name == "hip" && kinds.at(m->layer) == captures::LayerKind::kDense && !s.mask_view.show_hip_on_dense);
    const MaskCanvasEvents ev = canvas.draw("##cmp_mask", m, *m->source, head, s.mask_view, size, true, s.query_block, ctx.theme);
    if (ev.hovered_query >= 0) hover_q = ev.hovered_query, hover_k = ev.hovered_key;
    if (ev.clicked_query >= 0) {
      s.query_block = static_cast<int>(ev.clicked_query / m->params.b_q);
      s.query_token = static_cast<int>(ev.clicked_query);
    }
  }

  void draw_heat_map(PanelContext& ctx, const AnalysisView& view) {
    ImGui::Text("Per head, all layers:");
    ImGui::SameLine();
    quality_metric_picker(metric_);
    quality_grid_notes(view, ctx.theme);
    const QualityGridClick c = draw_quality_grid(view, metric_, ctx.state.layer, ctx.state.head, ctx.theme);
    if (c.layer >= 0) ctx.state.layer = c.layer, ctx.state.head = c.head;
  }

  // Each predicted token (i + 1) on a background coloured by nll_hip[i] - nll_dense[i].
  void draw_nll_text(PanelContext& ctx, const AnalysisView& a) {
    const Theme& t = ctx.theme;
    const PairedAnalysis& pa = *a.analysis;
    ImGui::Text("Prompt coloured by NLL(HiP) - NLL(dense) per token:");
    ImGui::SameLine();
    legend_item(viz::pack_rgba(viz::diverging(-1, 1, viz::unpack_rgb(t.plot_bg))), "HiP better");
    legend_item(viz::pack_rgba(viz::diverging(1, 1, viz::unpack_rgb(t.plot_bg))), "HiP worse (scale +/-0.5 nats)");
    ImGui::NewLine();
    ImGui::BeginChild("##nll_text", ImVec2(0, 0), true);
    if (t.mono) ImGui::PushFont(t.mono);
    const float wrap = ImGui::GetContentRegionAvail().x;
    const ImVec2 start = ImGui::GetCursorScreenPos();
    float x = 0, y = 0;
    const float lh = ImGui::GetTextLineHeightWithSpacing();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const viz::Rgb neutral = viz::unpack_rgb(t.plot_bg);
    for (size_t i = 1; i < a.prompt_tokens.size(); ++i) {
      std::string tok = a.prompt_tokens[i];
      bool newline = false;
      if (tok == "\n" || tok == "<0x0A>") {
        tok = "\\n";
        newline = true;
      }
      const ImVec2 ts = ImGui::CalcTextSize(tok.c_str());
      if (x + ts.x > wrap && x > 0) x = 0, y += lh;
      const ImVec2 p(start.x + x, start.y + y);
      const double diff = i - 1 < pa.hip.nll.size() ? pa.hip.nll[i - 1] - pa.dense.nll[i - 1] : 0.0;
      dl->AddRectFilled(p, ImVec2(p.x + ts.x, p.y + ts.y), viz::pack_rgba(viz::diverging(diff, 0.5, neutral)));
      dl->AddText(p, ImGui::GetColorU32(ImGuiCol_Text), tok.c_str());
      if (ImGui::IsMouseHoveringRect(p, ImVec2(p.x + ts.x, p.y + ts.y)) && ImGui::IsWindowHovered())
        ImGui::SetTooltip("token %zu %s\nNLL dense %.3f, HiP %.3f (diff %+.3f nats)", i, token_label(a, static_cast<int64_t>(i)).c_str(),
                          pa.dense.nll[i - 1], pa.hip.nll[i - 1], diff);
      x += ts.x;
      if (newline) x = 0, y += lh;
    }
    ImGui::Dummy(ImVec2(wrap, y + lh));
    if (t.mono) ImGui::PopFont();
    ImGui::EndChild();
  }

  MaskCanvas canvas_[2];  // one per side: each keeps its own picture
  MethodMultiples multiples_;
  AttentionProbe probe_;
  bool dense_dragging_ = false;
  bool stacked_ = false;  // the two images one above the other (narrow panes)
  double scale_lo_ = 1e-4, scale_hi_ = 1;
  int64_t cursor_q_ = -1, cursor_k_ = -1;  // the shared hover cursor, from the last frame
  GlTexture dense_tex_;
  std::shared_ptr<const DenseView> dense_src_;
  bool dense_dark_ = false;
  QualityMetric metric_ = QualityMetric::kRecall;
};

}  // namespace

std::unique_ptr<Panel> make_compare_panel() { return std::make_unique<ComparePanel>(); }

}  // namespace hipstudio::gui
