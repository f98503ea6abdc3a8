// KV cache: the paper's two offloading contexts (section 3.3) replayed over the decode steps of the
// paired run: which token positions each step read and whether the GPU bank held them, hit ratio
// per step and overall, bank sizes and bytes that would cross PCIe. Scrub through the steps.
#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "app/gui/capture_view.h"
#include "app/gui/chart_draw.h"
#include "app/gui/panel.h"
#include "app/gui/texture.h"
#include "app/gui/widgets.h"
#include "captures/hit_ratio_chart.h"
#include "engine/offload/access_map_columns.h"
#include "viz/plot_data.h"

namespace hipstudio::gui {

namespace {

class KvCachePanel final : public Panel {
 public:
  const char* id() const override { return "kvcache"; }
  const char* title() const override { return "KV cache"; }
  PaneSlot default_slot() const override { return PaneSlot::Right; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    // A capture's parameters are fixed: its values, shown disabled.
    HipKnobs shown = s.capture ? s.capture->knobs : HipKnobs{};
    HipKnobs& k = s.capture ? shown : s.knobs;
    if (s.capture) ImGui::BeginDisabled();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
    ImGui::SliderFloat("cache factor c", &k.cache_factor, 0.0f, 8.0f, "%.2f");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("decode steps", &k.decode_steps, 0, static_cast<int>(kGuiDecodeRoom));
    if (s.capture) ImGui::EndDisabled();
    ImGui::TextUnformatted("Access map of:");
    ImGui::SameLine();
    ImGui::RadioButton("mask estimation", &s.kv_context, 0);
    ImGui::SameLine();
    ImGui::RadioButton("sparse attention", &s.kv_context, 1);
    const auto& ov = ctx.snap.offload;
    if (!ov || ov->result.steps == 0) {
      empty_state(ov ? "No decode steps: raise 'decode steps' to see the KV cache at work."
                     : "Offloading simulation appears after the analysis (needs decode steps > 0).",
                  t);
      return;
    }
    const OffloadView& v = *ov;
    const offload::OffloadResult& r = v.result;
    StaleScope grey(view_stale(ctx, kStageOffload) || ctx.snap.stale[kStageAnalysis]);
    s.kv_step = std::clamp(s.kv_step, 0, static_cast<int>(r.steps) - 1);

    // Summary table.
    if (ImGui::BeginTable("##kv_summary", 7, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) {
      for (const char* h : {"context", "bank / head", "accesses", "hit ratio", "misses", "bytes moved", "page table"})
        ImGui::TableSetupColumn(h);
      ImGui::TableHeadersRow();
      for (int c = 0; c < 2; ++c) {
        const offload::ContextStats& cs = c == 0 ? r.mask : r.sparse;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(c == 0 ? "mask (keys)" : "sparse (K+V)");
        ImGui::TableNextColumn();
        ImGui::Text("%lld tokens", static_cast<long long>(cs.bank_tokens));
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(cs.total.accesses));
        ImGui::TableNextColumn();
        ImGui::Text("%.1f%%", offload::hit_ratio(cs.total) * 100);
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(cs.total.misses));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(viz::format_bytes(static_cast<double>(cs.total.bytes)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(viz::format_bytes(static_cast<double>(cs.page_table_bytes)).c_str());
      }
      ImGui::EndTable();
    }
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("%lld HiP layers x %lld heads, each with its own bank; T = %lld; %s of K+V per token and head",
                        static_cast<long long>(r.layers), static_cast<long long>(r.heads),
                        static_cast<long long>(r.context_tokens),
                        viz::format_bytes(static_cast<double>(v.config.sparse_bytes_per_token)).c_str());
    ImGui::PopTextWrapPos();

    // A bank that holds the whole context makes every read after the first a hit: the simulation
    // then says nothing about offloading (stories15M's 256 tokens; the paper's case is 64k+).
    for (int c = 0; c < 2; ++c) {
      const offload::ContextStats& b = c == 0 ? r.mask : r.sparse;
      if (b.bank_tokens < r.context_tokens) continue;
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(t.warn));
      ImGui::TextWrapped("The %s bank (%lld tokens per head) holds the whole %lld-token context: nothing is ever evicted, so its "
                         "misses are only first reads. Offloading means something only for contexts much longer than the bank "
                         "(the paper measures 64k tokens and up).",
                         c == 0 ? "mask-estimation" : "sparse-attention", static_cast<long long>(b.bank_tokens),
                         static_cast<long long>(r.context_tokens));
      ImGui::PopStyleColor();
    }
    const offload::ContextStats& cs = s.kv_context == 0 ? r.mask : r.sparse;
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 6);
    ImGui::SliderInt("step (scrub)", &s.kv_step, 0, static_cast<int>(r.steps) - 1);
    const offload::BankCounts& sc = cs.per_step_total[static_cast<size_t>(s.kv_step)];
    ImGui::Text("step %d: %lld reads, %lld hits, %lld misses (%.1f%% hit), %s moved", s.kv_step,
                static_cast<long long>(sc.accesses), static_cast<long long>(sc.hits), static_cast<long long>(sc.misses),
                offload::hit_ratio(sc) * 100, viz::format_bytes(static_cast<double>(sc.bytes)).c_str());

    // Access map: rows = decode steps, columns = token positions (narrowed to what a texture holds
    // and a panel shows: one column a token at 32k would not upload, and the map drew black).
    const offload::AccessMap& full = cs.map;
    if (map_src_ != ov || map_ctx_ != s.kv_context || map_dark_ != t.dark)
      map_columns_ = offload::access_map_columns(full, std::min<int64_t>(kMapMaxColumns, max_texture_size()));
    const offload::AccessMap& m = map_columns_;
    const float avail_y = ImGui::GetContentRegionAvail().y;
    const float map_h = std::max(ImGui::GetFontSize() * 6, avail_y * 0.45f);
    if (!m.cells.empty()) {
      // Mask estimation reads keys only on refresh steps (every r_m): its map shows those rows
      // alone (the others are empty by construction); sparse attention reads every step.
      std::vector<int64_t> rows;
      for (int64_t st = 0; st < m.steps; ++st)
        if (s.kv_context == 1 || cs.per_step_total[static_cast<size_t>(st)].accesses > 0) rows.push_back(st);
      if (rows.empty()) rows.push_back(0);
      if (map_src_ != ov || map_ctx_ != s.kv_context || map_dark_ != t.dark) {
        std::vector<uint32_t> rgba(rows.size() * static_cast<size_t>(m.tokens));
        for (size_t r2 = 0; r2 < rows.size(); ++r2)
          for (int64_t tok = 0; tok < m.tokens; ++tok) {
            const uint8_t c = m.at(rows[r2], tok);
            rgba[r2 * static_cast<size_t>(m.tokens) + static_cast<size_t>(tok)] =
                c == offload::kAccessHit ? t.mask.dense : c == offload::kAccessMiss ? t.mask.miss : t.mask.empty;
          }
        map_tex_.upload(rgba.data(), static_cast<int>(m.tokens), static_cast<int>(rows.size()));
        map_src_ = ov;
        map_ctx_ = s.kv_context;
        map_dark_ = t.dark;
      }
      legend_item(t.mask.dense, "hit");
      legend_item(t.mask.miss, "miss (fetched over PCIe)");
      legend_item(t.mask.empty, "not read");
      ImGui::NewLine();
      ImGui::PushTextWrapPos(0);
      if (s.kv_context == 0) {
        ImGui::TextDisabled("Token position ->, one row per refresh step (%zu of %lld steps: mask estimation reads keys only when it "
                            "re-estimates the mask, every r_m steps; the other steps read nothing and are left out). All layers "
                            "and heads folded (a miss anywhere wins).",
                            rows.size(), static_cast<long long>(m.steps));
      } else {
        ImGui::TextDisabled("Token position ->, decode step down; all layers and heads folded (a miss anywhere wins).");
      }
      ImGui::PopTextWrapPos();
      const ImVec2 o = ImGui::GetCursorScreenPos();
      const float w = ImGui::GetContentRegionAvail().x;
      ImGui::Image(map_tex_.id(), ImVec2(w, map_h));
      const bool hovered = ImGui::IsItemHovered();
      ImDrawList* dl = ImGui::GetWindowDrawList();
      const float row = map_h / static_cast<float>(rows.size());
      const auto at = std::find(rows.begin(), rows.end(), static_cast<int64_t>(s.kv_step));
      if (at != rows.end()) {
        const float r0 = static_cast<float>(at - rows.begin());
        dl->AddRect(ImVec2(o.x, o.y + row * r0), ImVec2(o.x + w, o.y + row * (r0 + 1)), t.accent, 0, 0, 2.0f);
      }
      if (hovered) {
        const ImVec2 mp = ImGui::GetIO().MousePos;
        const auto col = static_cast<int64_t>((mp.x - o.x) / w * static_cast<float>(m.tokens));
        const auto ri = static_cast<int64_t>((mp.y - o.y) / row);
        if (col >= 0 && col < m.tokens && ri >= 0 && ri < static_cast<int64_t>(rows.size())) {
          const int64_t st = rows[static_cast<size_t>(ri)];
          const uint8_t c = m.at(st, col);
          const char* what = c == offload::kAccessHit ? "hit" : c == offload::kAccessMiss ? "miss" : "not read";
          const int64_t first = offload::column_first_token(col, full.tokens, m.tokens);
          const int64_t last = offload::column_first_token(col + 1, full.tokens, m.tokens) - 1;
          if (first == last)
            ImGui::SetTooltip("step %lld, token %lld: %s", static_cast<long long>(st), static_cast<long long>(first), what);
          else
            ImGui::SetTooltip("step %lld, tokens %lld-%lld: %s (the worst of them)", static_cast<long long>(st),
                              static_cast<long long>(first), static_cast<long long>(last), what);
          if (ImGui::IsMouseDown(0)) s.kv_step = static_cast<int>(st);
        }
      }
    }
    // Hit ratio per step for both contexts (the chart the exports write, with the scrubbed step
    // marked), and beside it the overall ratio against bank size in the same series' colours and
    // dashes, so the one legend names both plots' curves.
    const float h = std::max(ImGui::GetFontSize() * 9, ImGui::GetContentRegionAvail().y - ImGui::GetFontSize() * 1.8f);
    viz::Chart chart = captures::hit_ratio_step_chart(r);
    viz::ChartSeries step;
    step.color = -1;
    step.width = 1;
    step.x = {static_cast<double>(s.kv_step), static_cast<double>(s.kv_step)};
    step.y = {0, 1};
    chart.plots[0].series.push_back(step);
    viz::ChartPlot banks;
    banks.x.label = "bank tokens per head (log)";
    banks.x.log2 = true;
    banks.y.label = "overall hit ratio";
    banks.y.lo = 0, banks.y.hi = 1;
    for (int c : {1, 0}) {
      viz::ChartSeries curve;
      curve.color = c;
      curve.markers = true;
      curve.dashed = c == 0;
      for (const auto& pt : c == 0 ? v.mask_curve : v.sparse_curve) {
        curve.x.push_back(static_cast<double>(std::max<int64_t>(1, pt.bank_tokens)));
        curve.y.push_back(pt.hit_ratio);
      }
      banks.series.push_back(std::move(curve));
    }
    viz::ChartSeries bank;  // the simulated mask bank's size, in mask estimation's colour
    bank.color = 0;
    bank.width = 1;
    bank.x = {static_cast<double>(std::max<int64_t>(1, r.mask.bank_tokens)), static_cast<double>(std::max<int64_t>(1, r.mask.bank_tokens))};
    bank.y = {0, 1};
    banks.series.push_back(bank);
    chart.plots.push_back(std::move(banks));
    draw_chart("kv", chart, ImVec2(0, h), t);
  }

 private:
  GlTexture map_tex_;
  offload::AccessMap map_columns_;  // the shown context's map, narrowed (map_src_ etc. say for what)
  static constexpr int64_t kMapMaxColumns = 4096;  // more than a panel has pixels
  std::shared_ptr<const OffloadView> map_src_;
  int map_ctx_ = -1;
  bool map_dark_ = false;
};

}  // namespace

std::unique_ptr<Panel> make_kvcache_panel() { return std::make_unique<KvCachePanel>(); }

}  // namespace hipstudio::gui
