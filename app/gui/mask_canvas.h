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
#include "engine/views/dense_view.h"
#include "viz/mask_image.h"

namespace hipstudio::gui {

struct MaskCanvasEvents {
  int64_t hovered_query = -1, hovered_key = -1;
  int64_t clicked_query = -1;  // a click without a drag (interactive canvases)
  bool clicked = false;        // any click without a drag (small multiples open their head)
};

class MaskCanvas {
 public:
  // Draws into a size x size square (with axis margins inside). `interactive`: wheel zoom, drag
  // pan, hover tooltip, click. `selected_qb` >= 0 outlines that query block.
  MaskCanvasEvents draw(const char* id, const std::shared_ptr<const LayerMaskSnapshot>& masks, const AnalysisView& analysis, int64_t head,
                        MaskViewState& view, float size, bool interactive, int64_t selected_qb, const Theme& theme);
  // Whether draw() would make a new picture for (masks, head): the part of a draw that takes time
  // at length (a 32k-token layer's 32 small multiples took ~0.25 s in one frame).
  bool picture_outdated(const std::shared_ptr<const LayerMaskSnapshot>& masks, int64_t head) const {
    return masks != picture_source_ || head != picture_head_ || dense_ != picture_dense_;
  }
  // A layer that runs dense (l < l_d): draw every visible key as attended (viz::make_dense_picture)
  // instead of HiP's selection, until set back.
  void set_dense(bool dense) { dense_ = dense; }
  // A cross-hair at (query, key) drawn over the picture (the linked view's shared cursor); -1: none.
  void set_cursor(int64_t query, int64_t key) { cursor_q_ = query, cursor_k_ = key; }

 private:
  GlTexture tex_;
  std::shared_ptr<const LayerMaskSnapshot> picture_source_;  // held: its address keys the cache
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
  bool dense_ = false, picture_dense_ = false;
  int64_t cursor_q_ = -1, cursor_k_ = -1;
  AttentionProbe probe_;
  bool dragging_ = false;
};

// Shared by the mask canvas and the linked dense image: the wheel zooms `view` about the mouse,
// a drag pans it (cells of a T x T square drawn at p0 with `side` pixels); `dragging` carries a
// drag across frames. Then clamps the view to the square.
void zoom_pan(MaskViewState& view, int64_t T, ImVec2 p0, float side, bool hovered, bool active, bool& dragging);
// Tick labels of the visible cells: keys along the top from `origin`, queries down the left of p0.
void draw_cell_axes(const MaskViewState& view, ImVec2 origin, ImVec2 p0, float side, const Theme& theme);

// Token text for tooltips: visible whitespace, clipped to a readable length.
std::string token_label(const AnalysisView& a, int64_t index);

}  // namespace hipstudio::gui
