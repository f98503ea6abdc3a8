#pragma once
// Every layer and head's quality as one heat grid (BertViz's model view): recall, mass or output
// error per cell from AnalysisView::layer_quality, the viewed head framed, a tooltip per cell and a
// click that picks that layer and head. The Side by side panel and the Layers x heads panel draw it.
#include <imgui.h>

#include "app/gui/results.h"
#include "app/gui/theme.h"

namespace hipstudio::gui {

enum class QualityMetric { kRecall, kMass, kError };

// Radio buttons recall / mass / output error on the current line, with tooltips saying what each is.
void quality_metric_picker(QualityMetric& metric);
// On the current line: how many layers' numbers are still missing, and why.
void quality_grid_notes(const AnalysisView& view, const Theme& theme);

// Where the grid's cells lie for a grid drawn at `origin` (its top-left: the head labels' row) in a
// region `avail_w` pixels wide, at the current font: column labels on the first row, a label column
// on the left. The harness finds a cell with it, as the drawing does.
struct QualityGridLayout {
  ImVec2 origin;
  float label_w = 0, cell_w = 0, cell_h = 0;
  int layers = 0, heads = 0;
  ImVec2 cell_min(int layer, int head) const {
    return ImVec2(origin.x + label_w + static_cast<float>(head) * cell_w, origin.y + cell_h * static_cast<float>(layer + 1));
  }
  ImVec2 cell_center(int layer, int head) const {
    const ImVec2 a = cell_min(layer, head);
    return ImVec2(a.x + (cell_w - 2) / 2, a.y + (cell_h - 2) / 2);
  }
};
QualityGridLayout quality_grid_layout(ImVec2 origin, float avail_w, int layers, int heads);
// The Layers x heads panel draws its grid alone in a child window of this id, at the child's start.
inline constexpr const char* kGridChild = "##quality_grid";
// The heads a grid of `view` shows: the most any computed layer has (0 while none is).
int quality_grid_heads(const AnalysisView& view);

struct QualityGridClick {
  int layer = -1, head = -1;  // the cell clicked this frame; -1: none
};
// Draws the grid at the cursor over the available width and reserves its size.
QualityGridClick draw_quality_grid(const AnalysisView& view, QualityMetric metric, int viewed_layer, int viewed_head,
                                   const Theme& theme);

}  // namespace hipstudio::gui
