// Token view (as BertViz shows attention): one query token's attention over the prompt as text,
// each key token coloured by its dense probability (log scale) beside the same text coloured by
// what HiP kept for that query (hit, false pick, miss, sink, window). Clicking a token in either
// column picks it as the query, and its query block in the search stepper. Rows come from
// dense_probability_row (engine/views/dense_view.h) and the views layer's masks (viz::mask_cell_flags of
// the layer's MaskPicture).
#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "captures/layer_kinds.h"
#include "app/gui/capture_view.h"
#include "app/gui/mask_canvas.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"
#include "engine/views/dense_view.h"
#include "viz/heat_image.h"

namespace hipstudio::gui {

namespace {

constexpr double kProbFloor = 1e-4;  // the log colour scale's bottom

// The query block holding the query token, from its first search step.
void pick_query_block(AppState& s, int64_t b_q) {
  if (b_q <= 0) return;
  s.query_block = static_cast<int>(s.query_token / b_q);
  s.step = 0;
}

class TokenPanel final : public Panel {
 public:
  const char* id() const override { return "tokens"; }
  const char* title() const override { return "Token view"; }
  PaneSlot default_slot() const override { return PaneSlot::Right; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    const auto& m = ctx.snap.masks;
    if (!m || !m->source || !m->source->has_inputs(m->layer)) {
      empty_state(ctx.snap.busy ? "Computing the masks..." : "No masks yet: load a model and a prompt.", t);
      return;
    }
    const AnalysisView& a = *m->source;
    if (!a.host_ready(m->layer)) {  // its rows read the layer on the host: wait for the worker's copy
      empty_state("Copying the layer's Q/K/V to the host (in the background)...", t);
      return;
    }
    const hip::AttentionInputs in = a.inputs(m->layer);
    const int64_t head = std::min<int64_t>(s.head, m->hip.heads - 1);
    const int last = static_cast<int>(in.tq - 1);
    if (s.query_token < 0 || s.query_token > last) s.query_token = last;
    const int64_t q = s.query_token;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
    // The query token and the search stepper's query block move together: a pick here is a pick there.
    if (ImGui::SliderInt("query token", &s.query_token, 0, last)) pick_query_block(s, m->params.b_q);
    ImGui::SameLine();
    ImGui::TextDisabled("or click a token below");
    const captures::LayerKinds kinds = captures::layer_kinds(*a.analysis);
    const bool dense_layer = !kinds.hip(m->layer);
    const std::string kind_note = dense_layer ? " (" + kinds.text(m->layer) + ": HiP does not replace it)" : "";
    const bool stale = view_stale(ctx, kStageMasks);
    StaleScope grey(stale);
    // The row, cached per (inputs, head, query): O(T d) once per pick, not per frame.
    if (row_q_ != in.q || row_head_ != head || row_query_ != q) {
      row_ = dense_probability_row(in, m->math, head, q);
      row_q_ = in.q, row_head_ = head, row_query_ = q;
    }
    if (picture_src_ != m || picture_head_ != head) {
      picture_ = viz::make_mask_picture(m->hip, m->has_oracle ? &m->oracle : nullptr, nullptr, head, in.tq, in.tk, m->params);
      picture_src_ = m, picture_head_ = head;
    }
    double kept_mass = 0;
    for (size_t j = 0; j < row_.size(); ++j)
      if (dense_layer || (viz::mask_cell_flags(picture_, q, static_cast<int64_t>(j)) & (viz::kMaskHip | viz::kMaskSink | viz::kMaskDense)))
        kept_mass += row_[j];
    ImGui::TextWrapped("Layer %lld, head %lld, query token %lld %s (query block %lld): HiP's attention keeps %.1f%% of the dense "
                       "probability%s",
                       static_cast<long long>(m->layer), static_cast<long long>(head), static_cast<long long>(q), token_label(a, q).c_str(),
                       static_cast<long long>(q / m->params.b_q), kept_mass * 100,
                       kind_note.c_str());
    if (s.capture && !s.capture->has_pieces)
    {
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ImGui::TextWrapped("This capture stores token ids (#id), not their text: the sidebar shows the prompt's text.");
      ImGui::PopStyleColor();
    }
    if (stale) {
      warn_text(stale_reason(ctx, kStageMasks), t);
    }
    const float fh = ImGui::GetFontSize();
    const float bar_w = fh * 6.0f;  // the colorbar and the legend ("false pick") under it
    const float col_w = (ImGui::GetContentRegionAvail().x - bar_w - ImGui::GetStyle().ItemSpacing.x * 2) / 2;
    const float h = ImGui::GetContentRegionAvail().y;
    int64_t picked = -1;
    auto label = [&](int64_t j) { return j < static_cast<int64_t>(a.prompt_tokens.size()) ? token_text(a.prompt_tokens[static_cast<size_t>(j)]) : "?"; };
    // Dense probabilities.
    ImGui::BeginChild("##dense_tokens", ImVec2(col_w, h), true);
    ImGui::TextUnformatted("Dense attention (log colour)");
    const TokenFlow fd = dense_flow_.draw(
        a.prompt_tokens.data(), in.tk, label,
        [&](int64_t j) -> uint32_t {
          if (j >= static_cast<int64_t>(row_.size())) return 0;
          return viz::pack_rgba(viz::colormap(viz::ColorMapKind::Magma, viz::log_scale_position(row_[static_cast<size_t>(j)], kProbFloor, 1.0)), 0.85f);
        },
        q, t, [&](int64_t j) -> uint32_t {
          if (j >= static_cast<int64_t>(row_.size())) return t.text_dim;
          return viz::log_scale_position(row_[static_cast<size_t>(j)], kProbFloor, 1.0) > 0.55 ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
        });
    tooltip(a, fd.hovered, q);
    if (fd.clicked) picked = fd.hovered;
    ImGui::EndChild();
    ImGui::SameLine();
    // What HiP kept.
    ImGui::BeginChild("##hip_tokens", ImVec2(col_w, h), true);
    ImGui::TextUnformatted(dense_layer ? "Dense layer: every visible key" : "What HiP kept for this query");
    const viz::MaskPalette& p = t.mask;
    const TokenFlow fh2 = hip_flow_.draw(
        a.prompt_tokens.data(), in.tk, label,
        [&](int64_t j) -> uint32_t {
          if (j > q) return 0;
          if (dense_layer) return p.dense;
          const uint8_t f = viz::mask_cell_flags(picture_, q, j);
          viz::MaskPalette pal = p;
          pal.show_oracle = m->has_oracle;
          const uint32_t c = viz::mask_texel_color(f, pal);
          return c == p.empty ? 0 : c;
        },
        q, t, [&](int64_t j) -> uint32_t {
          if (j > q) return t.text_dim;
          const uint8_t f = dense_layer ? static_cast<uint8_t>(viz::kMaskDense) : viz::mask_cell_flags(picture_, q, j);
          return f & (viz::kMaskHip | viz::kMaskMiss | viz::kMaskSink | viz::kMaskDense) ? IM_COL32(0, 0, 0, 255)
                                                                                          : ImGui::GetColorU32(ImGuiCol_Text);
        });
    tooltip(a, fh2.hovered, q);
    if (fh2.clicked) picked = fh2.hovered;
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginGroup();
    colorbar_log("##token_bar", bar_w, std::min(h * 0.6f, fh * 14), kProbFloor, 1.0, "p (dense)", t);
    legend_item(p.hit, "hit");
    ImGui::NewLine();
    legend_item(p.false_pick, "false pick");
    ImGui::NewLine();
    legend_item(p.miss, "miss");
    ImGui::NewLine();
    legend_item(p.sink, "sink");
    ImGui::NewLine();
    legend_item(p.dense, "dense tail");
    ImGui::EndGroup();
    if (picked >= 0 && picked < in.tq) {
      s.query_token = static_cast<int>(picked);
      pick_query_block(s, m->params.b_q);
    }
  }

 private:
  void tooltip(const AnalysisView& a, int64_t j, int64_t q) {
    if (j < 0) return;
    ImGui::BeginTooltip();
    ImGui::Text("key %lld %s", static_cast<long long>(j), token_label(a, j).c_str());
    if (j < static_cast<int64_t>(row_.size())) {
      ImGui::Text("dense probability from query %lld: %.5f", static_cast<long long>(q), row_[static_cast<size_t>(j)]);
      ImGui::TextUnformatted(outcome(viz::mask_cell_flags(picture_, q, j)));
    } else {
      ImGui::TextDisabled("future key (causal mask)");
    }
    ImGui::TextDisabled("click: make this token the query");
    ImGui::EndTooltip();
  }
  static const char* outcome(uint8_t f) {
    if (f & viz::kMaskSink) return "sink: always attended";
    if (f & viz::kMaskDense) return "dense tail (sliding window and diagonal block): always attended";
    if (f & viz::kMaskHit) return "HiP kept it, and so does the oracle (hit)";
    if (f & viz::kMaskFalsePick) return "HiP kept it; the oracle would not (false pick)";
    if (f & viz::kMaskMiss) return "the oracle keeps it; HiP missed it";
    return "not attended by HiP";
  }

  TokenFlowView dense_flow_, hip_flow_;
  std::vector<double> row_;
  const float* row_q_ = nullptr;
  int64_t row_head_ = -1, row_query_ = -1;
  std::shared_ptr<const LayerMaskSnapshot> picture_src_;
  int64_t picture_head_ = -1;
  viz::MaskPicture picture_;
};

}  // namespace

std::unique_ptr<Panel> make_token_panel() { return std::make_unique<TokenPanel>(); }

}  // namespace hipstudio::gui
