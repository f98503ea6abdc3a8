// Iteration stepper: replays HiP's hierarchical search for one (layer, head, query block), one
// pruning iteration at a time, as in the paper's figure fig:masking_visualization: the branches of
// the step over the key axis (kept or pruned, representative block, score), the partial masks of
// every step so far, and how much of the oracle's top-k the surviving nodes still cover.
#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "app/gui/mask_canvas.h"
#include "app/gui/texture.h"
#include "viz/plot_data.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class StepperPanel final : public Panel {
 public:
  const char* id() const override { return "stepper"; }
  const char* title() const override { return "Iterations"; }
  PaneSlot default_slot() const override { return PaneSlot::Right; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    const auto& tv = ctx.snap.trace;
    if (!tv) {
      empty_state("Click a row of the mask view to pick a query block; its pruning iterations show here.", t);
      return;
    }
    const TraceView& v = *tv;
    held_ = tv;  // keeps the traced view alive while its address keys the texture caches
    const int last = static_cast<int>(v.steps.size()) - 1;
    s.step = std::clamp(s.step, 0, std::max(0, last));

    // Controls.
    if (ImGui::Button("|<")) s.step = 0;
    ImGui::SameLine();
    if (ImGui::Button("<")) s.step = std::max(0, s.step - 1);
    ImGui::SameLine();
    if (ImGui::Button(s.playing ? "Pause" : "Play", ImVec2(ImGui::GetFontSize() * 4, 0))) {
      s.playing = !s.playing;
      if (s.playing && s.step >= last) s.step = 0;
    }
    ImGui::SameLine();
    if (ImGui::Button(">")) s.step = std::min(last, s.step + 1);
    ImGui::SameLine();
    if (ImGui::Button(">|")) s.step = last;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
    ImGui::SliderFloat("steps/s", &s.play_rate, 0.5f, 10.0f, "%.1f");
    if (s.playing) {
      s.play_accum += ctx.dt * s.play_rate;
      while (s.play_accum >= 1.0) {
        s.play_accum -= 1.0;
        if (s.step < last) {
          ++s.step;
        } else {
          s.playing = false;
        }
      }
    }

    const bool stale = view_stale(ctx, kStageTrace);
    // Stepping past the initial nodes marks the block for File > Save capture (its trace is stored).
    if (s.step > 0 && !ctx.snap.stale[kStageTrace] && !ctx.state.capture) s.record_stepped_block({v.layer, v.head, v.query_block});
    StaleScope grey(stale);
    const hip::MaskTrace& tr = v.trace;
    const viz::TraceStep& st = v.steps[static_cast<size_t>(s.step)];
    ImGui::TextWrapped("layer %lld, head %lld, query block %lld (rows %lld-%lld): search over key blocks [%lld, %lld) = %lld blocks, Kb = %lld",
                static_cast<long long>(v.layer), static_cast<long long>(v.head), static_cast<long long>(v.query_block),
                static_cast<long long>(tr.row_begin), static_cast<long long>(tr.row_end - 1),
                static_cast<long long>(tr.lo), static_cast<long long>(tr.hi), static_cast<long long>(tr.hi - tr.lo),
                static_cast<long long>(v.params.k / v.params.b_k));
    if (!v.source.empty()) ImGui::TextDisabled("traced by the %s", v.source.c_str());
    if (tr.hi <= tr.lo) {
      ImGui::TextWrapped("Nothing to search: this block's keys are all sink or sliding window (attended densely). "
                         "Pick a later query block (Down arrow, or click lower in the mask view).");
    } else if (st.iteration < 0) {
      ImGui::TextWrapped("Step %d / %d: %s, %zu nodes hold %lld blocks", s.step, last,
                  tr.initial_begin.empty() ? "range fits the budget (every block selected)" : "initial nodes",
                  st.nodes.size(), static_cast<long long>(st.alive_blocks));
    } else {
      ImGui::TextWrapped("Step %d / %d: iteration %d: %zu branches scored, %zu kept, %lld blocks still alive", s.step, last,
                  st.iteration + 1, tr.iterations[static_cast<size_t>(st.iteration)].branches.size(), st.nodes.size(),
                  static_cast<long long>(st.alive_blocks));
    }
    const ImVec4 good = ImGui::ColorConvertU32ToFloat4(t.good);
    ImGui::Text("Oracle blocks still covered: ");
    ImGui::SameLine(0, 0);
    ImGui::TextColored(good, "%.1f%%", st.oracle_coverage * 100);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Running recall: the share of the oracle's top-k blocks that the surviving nodes still contain.\n"
                        "At the last step every node is one block and this is the final recall.");
    if (s.step == last) {
      std::vector<int32_t> starts;
      for (const auto& n : st.nodes) starts.push_back(n.first);
      const bool same = starts == v.engine_blocks;
      ImGui::TextColored(same ? good : ImGui::ColorConvertU32ToFloat4(t.bad), "Final mask %s the engine's mask for this block (%zu blocks)",
                         same ? "equals" : "DIFFERS FROM", v.engine_blocks.size());
    }
    legend_item(t.kept, "kept branch");
    legend_item(t.dropped, "pruned branch");
    legend_item(t.dropped & 0x40FFFFFF, "pruned earlier (faded, 'it N')");
    legend_item(t.repr, "representative block");
    legend_item(t.mask.miss, "oracle top-k block");
    legend_item(t.text_dim, "grey line: the oracle's score of each key block (max q.k over its keys)");
    ImGui::NewLine();
    draw_branches(ctx, v, st);
    draw_partial_masks(ctx, v, s.step);
  }

 private:
  // Bars over the key axis: the oracle block scores (thin line, for context), then this step's
  // branches with height = branch score, colour = kept / pruned, a tick at the representative
  // block. The bars are rasterised into one texture (hundreds to thousands of them at long prompts).
  void draw_branches(PanelContext& ctx, const TraceView& v, const viz::TraceStep& st) {
    const Theme& t = ctx.theme;
    const hip::MaskTrace& tr = v.trace;
    const double lo = static_cast<double>(tr.lo), hi = static_cast<double>(std::max(tr.hi, tr.lo + 1));
    double smin = 1e300, smax = -1e300;
    for (double x : v.oracle_scores) smin = std::min(smin, x), smax = std::max(smax, x);
    const std::vector<hip::TraceBranch>* branches =
        st.iteration >= 0 ? &tr.iterations[static_cast<size_t>(st.iteration)].branches : nullptr;
    if (branches)
      for (const auto& b : *branches) smin = std::min(smin, b.score), smax = std::max(smax, b.score);
    if (!(smax > smin)) smin = smax - 1;
    const double ytop = smax + (smax - smin) * 0.08;
    const float h = std::max(ImGui::GetFontSize() * 10, ImGui::GetContentRegionAvail().y * 0.6f);
    PlotArea p = begin_plot("##branches", ImVec2(0, h), lo, hi, smin, ytop, "key block",
                            "score (max q.k over sampled rows x keys)", t);
    const int w = std::max(1, static_cast<int>(p.max.x - p.min.x)), ph = std::max(1, static_cast<int>(p.max.y - p.min.y));
    const double span = ytop - smin;
    if (bars_src_ != &v || bars_step_ != st.iteration || bars_w_ != w || bars_h_ != ph || bars_dark_ != t.dark) {
      std::vector<viz::ImageBar> bars;
      const double px = (hi - lo) / w;  // blocks per pixel: a one-pixel gap separates wide neighbours
      auto right = [&](const hip::TraceBranch& b) { return b.end - b.begin > 3 * px ? b.end - px : double(b.end); };
      if (branches) {
        // Branches pruned by earlier iterations stay, faded, at the score that lost them.
        for (int j = 0; j < st.iteration; ++j)
          for (const auto& b : tr.iterations[static_cast<size_t>(j)].branches)
            if (!b.kept) bars.push_back({double(b.begin), right(b), smin, b.score, t.dropped & 0x40FFFFFF});
        for (int pass = 0; pass < 2; ++pass)  // pruned first, kept on top
          for (const auto& b : *branches)
            if (b.kept == (pass == 1)) bars.push_back({double(b.begin), right(b), smin, b.score, (b.kept ? t.kept : t.dropped) & 0xC0FFFFFF});
        for (const auto& b : *branches)
          bars.push_back({double(b.repr), double(b.repr + 1), b.score - span * 0.012, b.score + span * 0.012, t.repr});
      } else {
        for (const auto& n : st.nodes) bars.push_back({double(n.first), double(n.second), smin, smax, t.kept & 0x50FFFFFF});
      }
      for (int32_t b : v.oracle_blocks) bars.push_back({double(b), double(b + 1), smin, smin + span * 0.025, t.mask.miss});
      const std::vector<uint32_t> img = viz::rasterize_bars(bars, lo, hi, smin, ytop, w, ph, 0);
      bars_tex_.upload(img.data(), w, ph);
      bars_src_ = &v, bars_step_ = st.iteration, bars_w_ = w, bars_h_ = ph, bars_dark_ = t.dark;
    }
    ImGui::GetWindowDrawList()->AddImage(bars_tex_.id(), p.min, ImVec2(p.min.x + w, p.min.y + ph), ImVec2(0, 0), ImVec2(1, 1),
                                         ImGui::GetColorU32(IM_COL32_WHITE));  // style alpha: greyed when stale
    // Oracle scores as a line, folded to one point per pixel column.
    std::vector<double> xs, ys;
    const size_t n = v.oracle_scores.size();
    const size_t stride = std::max<size_t>(1, n / static_cast<size_t>(w));
    for (size_t i = 0; i < n; i += stride) {
      double m = -1e300;
      for (size_t j = i; j < std::min(n, i + stride); ++j) m = std::max(m, v.oracle_scores[j]);
      xs.push_back(lo + static_cast<double>(i) + 0.5 * static_cast<double>(stride));
      ys.push_back(m);
    }
    plot_line(p, xs, ys, t.text_dim, 1.0f);
    // Earlier iterations' pruned branches: the iteration that pruned them, where there is room.
    if (branches) {
      ImDrawList* dl = ImGui::GetWindowDrawList();
      for (int j = 0; j < st.iteration; ++j)
        for (const auto& b : tr.iterations[static_cast<size_t>(j)].branches) {
          if (b.kept) continue;
          const ImVec2 a = p.at(b.begin, smin), c = p.at(b.end, b.score);
          const std::string lbl = fmt("it %d", j + 1);
          if (c.x - a.x > ImGui::CalcTextSize(lbl.c_str()).x + 4)
            dl->AddText(ImVec2((a.x + c.x - ImGui::CalcTextSize(lbl.c_str()).x) / 2, c.y - ImGui::GetFontSize() - 1), t.text_dim, lbl.c_str());
        }
    }
    end_plot();
    if (branches && p.hovered) {
      const double blk = p.x_of(p.mouse.x);
      bool shown = false;
      for (int j = st.iteration; j >= 0 && !shown; --j)  // this step's branch, else the earlier one that pruned here
        for (const auto& b : tr.iterations[static_cast<size_t>(j)].branches) {
          if (blk < b.begin || blk >= b.end || (j < st.iteration && b.kept)) continue;
          ImGui::BeginTooltip();
          ImGui::Text("branch: key blocks [%d, %d) = keys [%lld, %lld)", b.begin, b.end,
                      static_cast<long long>(b.begin * v.params.b_k), static_cast<long long>(b.end * v.params.b_k));
          ImGui::Text("representative block %d, score %.4f", b.repr, b.score);
          if (j < st.iteration) {
            ImGui::Text("pruned by iteration %d (faded)", j + 1);
          } else {
            ImGui::TextUnformatted(b.kept ? "kept (among the Kb best)" : "pruned");
          }
          ImGui::EndTooltip();
          shown = true;
          break;
        }
    }
  }

  // The paper's picture: one row per step, key blocks along x; yellow where a node is still alive,
  // dark where pruned; the framed row is the current step. One texture, pooled to pixel columns.
  void draw_partial_masks(PanelContext& ctx, const TraceView& v, int upto) {
    const Theme& t = ctx.theme;
    const hip::MaskTrace& tr = v.trace;
    ImGui::TextUnformatted("Partial masks, one row per step (alive nodes; the framed row is the current mask)");
    const int rows = static_cast<int>(v.steps.size());
    const float avail_h = ImGui::GetContentRegionAvail().y - ImGui::GetStyle().ItemSpacing.y;
    const float row_h = std::clamp(avail_h / std::max(1, rows), 4.0f, ImGui::GetFontSize() * 2.0f);
    const float label_w = ImGui::GetFontSize() * 4.5f;
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const float w = ImGui::GetContentRegionAvail().x - label_w;
    ImGui::Dummy(ImVec2(label_w + w, row_h * rows));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const int64_t n = std::max<int64_t>(1, tr.hi - tr.lo);
    const int cols = static_cast<int>(std::clamp<int64_t>(n, 1, std::max(1, static_cast<int>(w))));
    if (pm_src_ != &v || pm_upto_ != upto || pm_cols_ != cols || pm_dark_ != t.dark) {
      std::vector<uint32_t> img(static_cast<size_t>(cols) * static_cast<size_t>(rows), t.plot_bg);
      for (int r = 0; r <= std::min(upto, rows - 1); ++r) {
        uint32_t* line = img.data() + static_cast<size_t>(r) * static_cast<size_t>(cols);
        std::fill(line, line + cols, t.mask.empty);
        for (const auto& nd : v.steps[static_cast<size_t>(r)].nodes) {
          const int64_t a = (nd.first - tr.lo) * cols / n, b = std::max(a + 1, ((nd.second - tr.lo) * cols + n - 1) / n);
          std::fill(line + std::clamp<int64_t>(a, 0, cols), line + std::clamp<int64_t>(b, 0, cols), t.kept);
        }
      }
      pm_tex_.upload(img.data(), cols, rows);
      pm_src_ = &v, pm_upto_ = upto, pm_cols_ = cols, pm_dark_ = t.dark;
    }
    dl->AddImage(pm_tex_.id(), ImVec2(o.x + label_w, o.y), ImVec2(o.x + label_w + w, o.y + row_h * rows), ImVec2(0, 0), ImVec2(1, 1),
                 ImGui::GetColorU32(IM_COL32_WHITE));
    for (int r = 0; r < rows; ++r) {
      const float y = o.y + r * row_h;
      const bool current = r == upto;
      if (row_h >= ImGui::GetFontSize() * 0.8f) {
        const std::string label = r == 0 ? "init" : fmt("iter %d", r);
        dl->AddText(ImVec2(o.x, y + (row_h - ImGui::GetFontSize()) / 2),
                    current ? ImGui::GetColorU32(ImGuiCol_Text) : t.text_dim, label.c_str());
      }
      if (current) dl->AddRect(ImVec2(o.x + label_w - 1, y), ImVec2(o.x + label_w + w + 1, y + row_h), t.accent, 0, 0, 2.0f);
    }
  }

  std::shared_ptr<const TraceView> held_;
  GlTexture bars_tex_, pm_tex_;
  const TraceView* bars_src_ = nullptr;
  int bars_step_ = -2, bars_w_ = 0, bars_h_ = 0;
  bool bars_dark_ = false;
  const TraceView* pm_src_ = nullptr;
  int pm_upto_ = -1, pm_cols_ = 0;
  bool pm_dark_ = false;
};

}  // namespace

std::unique_ptr<Panel> make_stepper_panel() { return std::make_unique<StepperPanel>(); }

}  // namespace hipstudio::gui
