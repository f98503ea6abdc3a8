// Layers x heads at a glance (BertViz's model view): every layer and head's recall, mass or output
// error as one heat grid (app/gui/quality_grid.h); a click opens that layer and head in the other
// views. The grid sits in its own scrolling child, so a 32 x 32 model stays readable.
#include <imgui.h>

#include "app/gui/panel.h"
#include "app/gui/quality_grid.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class GridPanel final : public Panel {
 public:
  const char* id() const override { return "grid"; }
  const char* title() const override { return "Layers x heads"; }
  PaneSlot default_slot() const override { return PaneSlot::Left; }

  void draw(PanelContext& ctx) override {
    const auto& a = ctx.snap.analysis;
    if (!a || quality_grid_heads(*a) == 0) {
      empty_state(ctx.snap.busy ? "Computing the layers' views..." : "No results yet: load a model and a prompt.", ctx.theme);
      return;
    }
    StaleScope grey(view_stale(ctx, kStageViews));
    quality_metric_picker(metric_);
    quality_grid_notes(*a, ctx.theme);
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("Viewed: layer %d, head %d (framed). KL(dense || HiP) is the model output's, one number: %.5f", ctx.state.layer,
                        ctx.state.head, a->analysis->kl);
    ImGui::PopTextWrapPos();
    ImGui::BeginChild(kGridChild, ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
    const QualityGridClick c = draw_quality_grid(*a, metric_, ctx.state.layer, ctx.state.head, ctx.theme);
    ImGui::EndChild();
    if (c.layer >= 0) {
      ctx.state.layer = c.layer, ctx.state.head = c.head;
      ctx.state.focus_panel = "mask";  // open it
    }
  }

 private:
  QualityMetric metric_ = QualityMetric::kRecall;
};

}  // namespace

std::unique_ptr<Panel> make_grid_panel() { return std::make_unique<GridPanel>(); }

}  // namespace hipstudio::gui
