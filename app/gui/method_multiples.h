#pragma once
// The Side by side panel's small multiples: every compared method's mask of the viewed head, one
// small canvas each, under the zoom the linked views share (AppState::mask_view); the methods are
// chosen by check boxes (AppState::compare_multiples) and a click on one shows it on the right
// side. Also what the panel's two sides and the multiples share about a method's published view.
#include <cstdint>
#include <map>
#include <string>

#include "app/gui/mask_canvas.h"
#include "app/gui/panel.h"

namespace hipstudio::gui {

// Whether a method's published view is of the layer and run on screen and of the current request,
// or at least of the layer and run on screen while the worker computes others (drawn as it is);
// otherwise it is drawn greyed: the worker is computing the current one.
bool method_mask_current(const PanelContext& ctx, const MethodMaskView& v);
// Mean recall against the layer's oracle over the head's query blocks; NaN without an oracle.
double head_recall(const LayerMaskSnapshot& m, int64_t head);
// What stands in for a method's mask not published yet: "computing..." while the worker may still
// compute it, else why it stopped (a cancel: the next change of a setting computes it).
std::string method_mask_pending_text(const PanelContext& ctx);
// The registry's title of `name` ("Quest"); the name itself where the registry has none.
std::string method_title(const std::string& name);

class MethodMultiples {
 public:
  void draw(PanelContext& ctx);

 private:
  std::map<std::string, MaskCanvas> canvases_;  // one per method: each keeps its own picture
};

}  // namespace hipstudio::gui
