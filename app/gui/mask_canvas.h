#pragma once
// The zoomable picture of one head's block mask (query x key), shared by the mask view and the
// side-by-side view. The texture is the max-pooled level of detail of the visible cells at screen
// resolution (viz/mask_image.h), rebuilt only when the view, the data or the overlays change.
#include <cstdint>
#include <memory>
#include <vector>

#include <imgui.h>

#include "app/gui/app_state.h"
#include "app/gui/results.h"
#include "app/gui/texture.h"
#include "app/gui/theme.h"
#include "viz/attention_probe.h"
#include "viz/mask_image.h"

namespace hipstudio::gui {

struct MaskCanvasEvents {
  int64_t hovered_query = -1, hovered_key = -1;
  int64_t clicked_query = -1;  // a click without a drag
};

class MaskCanvas {
 public:
  // Draws into a size x size square (with axis margins inside). `interactive`: wheel zoom, drag
  // pan, hover tooltip, click. `selected_qb` >= 0 outlines that query block.
  MaskCanvasEvents draw(const char* id, const std::shared_ptr<const LayerMasks>& masks, const AnalysisView& analysis, int64_t head,
                        MaskViewState& view, float size, bool interactive, int64_t selected_qb, const Theme& theme);
  int rebuilds() const { return rebuilds_; }
  int texture_width() const { return tex_.width(); }
  int texture_height() const { return tex_.height(); }

 private:
  GlTexture tex_;
  std::shared_ptr<const LayerMasks> picture_source_;  // held: its address keys the cache
  int64_t picture_head_ = -1;
  viz::MaskPicture picture_;
  std::vector<uint8_t> flags_;
  std::vector<uint32_t> rgba_;
  struct Key {
    const void* masks = nullptr;
    int64_t head = -1, r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    int w = 0, h = 0;
    uint32_t palette = 0;
    bool operator==(const Key& o) const {
      return masks == o.masks && head == o.head && r0 == o.r0 && r1 == o.r1 && c0 == o.c0 && c1 == o.c1 && w == o.w &&
             h == o.h && palette == o.palette;
    }
  } key_;
  int rebuilds_ = 0;
  viz::AttentionProbe probe_;
  bool dragging_ = false;
};

// Token text for tooltips: visible whitespace, clipped to a readable length.
std::string token_label(const AnalysisView& a, int64_t index);

}  // namespace hipstudio::gui
