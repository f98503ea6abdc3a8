// The self-test's steps for the researcher views and what the first trial tripped over: refused
// settings grey the views, a dense layer is drawn dense, the token view, all heads, the linked side
// by side, and the exported figure read back into a window. Each saves a screenshot; the last step
// decodes them and checks what they must show (colours the views draw, counted in the pixels).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <imgui.h>
#include <imgui_internal.h>  // the sidebar's scroll range (the harness reads ImGui's window list)

#include "app/gui/export_preview.h"
#include "app/gui/harness/self_test.h"
#include "app/gui/shortcuts.h"
#include "captures/layer_kinds.h"
#include "engine/views/dense_view.h"
#include "viz/colormap.h"

namespace hipstudio::gui {

namespace {

const char* const kMore = kSelfTestMore;

// The vertical scroll range of the child window `id` (ImGui names a child "Parent/##id_XXXXXXXX";
// its own children add "/..." after that); -1 when there is none.
float child_scroll_max(const std::string& id) {
  float m = -1;
  for (ImGuiWindow* w : GImGui->Windows) {
    const std::string name = w->Name;
    const size_t slash = name.rfind('/');
    if (w->Active && slash != std::string::npos && name.compare(slash + 1, id.size(), id) == 0) m = std::max(m, w->ScrollMax.y);
  }
  return m;
}

int64_t count_color(const DecodedPng& png, uint32_t color) {
  return std::count(png.rgba.begin(), png.rgba.end(), color | 0xff000000u);
}

// Magma's warm half (orange / red, r > g > b): the dense image's colours, which no other view uses.
int64_t count_warm(const DecodedPng& png, uint32_t exclude) {
  int64_t n = 0;
  for (uint32_t c : png.rgba) {
    const int r = c & 0xff, g = (c >> 8) & 0xff, b = (c >> 16) & 0xff;
    if (r > g && g > b && r - b > 90 && (c | 0xff000000u) != (exclude | 0xff000000u)) ++n;
  }
  return n;
}

std::string fmt_fail(const char* f, long long a, long long b = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

}  // namespace

void SelfTest::build_view_steps() {
  auto shot = [this](const std::string& suffix) {
    if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, suffix);
  };
  auto fresh_masks = [](int layer) {
    return [layer](const AppState&, const Snapshot& s) {
      return s.masks && s.masks->layer == layer && s.fresh(kStageMasks) && s.dense && s.fresh(kStageDense) && !s.busy;
    };
  };
  // One registration per shortcut: no key bound twice, every tab panel reachable by one, and no
  // binding names a panel that does not exist (the View menu and the help read the same table).
  steps_.push_back({"shortcuts: one table, each key once, every panel",
                    [](AppState&) {},
                    [](const AppState&, const Snapshot&) { return true; },
                    [this](AppState&, const Snapshot&) -> std::string {
                      const auto& table = shortcuts();
                      for (size_t i = 0; i < table.size(); ++i)
                        for (size_t j = i + 1; j < table.size(); ++j)
                          if (table[i].key == table[j].key && table[i].ctrl == table[j].ctrl)
                            return std::string("two shortcuts on ") + table[i].keys + " / " + table[j].keys;
                      for (const auto& p : panels_)
                        if (p->slot != PaneSlot::Sidebar && !panel_shortcut(p->id())) return std::string("no shortcut shows ") + p->title();
                      for (const Shortcut& k : table)
                        if (k.action == Action::FocusPanel &&
                            std::none_of(panels_.begin(), panels_.end(), [&](const auto& p) { return std::string(p->id()) == k.panel; }))
                          return std::string(k.keys) + " names no panel";
                      return "";
                    },
                    10, 1});
  // The trial's case: b_k = 4 refuses sink = 2; the b_k = 2 result stays, greyed, and says why.
  steps_.push_back({"refused settings: the shown result is marked stale",
                    [](AppState& s) {
                      s.focus_panel = "mask";
                      s.knobs.b_k = 4;
                      s.knobs.sink = 2;
                    },
                    [](const AppState& s, const Snapshot&) { return !s.invalid.empty(); },
                    [shot](AppState& s, const Snapshot& snap) -> std::string {
                      if (!snap.masks || snap.masks->params.b_k != 2) return "the last valid result is not on screen";
                      if (!view_stale(s, snap, kStageMasks)) return "a result that no longer matches the sliders is not stale";
                      std::printf("self-test:   refused: %s\n", s.invalid.c_str());
                      shot("stale");  // drawn after this check: b_k goes back in the next step
                      return "";
                    },
                    30, 3});
  steps_.push_back({"a dense layer (l < l_d) is drawn dense",
                    [](AppState& s) {
                      s.knobs.b_k = 2;
                      s.layer = 0;
                      s.focus_panel = "mask";
                      s.mask_view = MaskViewState{};
                    },
                    fresh_masks(0),
                    [shot](AppState& s, const Snapshot& snap) -> std::string {
                      if (!s.invalid.empty()) return "the knobs are still refused: " + s.invalid;
                      if (view_stale(s, snap, kStageMasks)) return "the dense layer's masks are stale";
                      if (captures::layer_kinds(*snap.analysis->analysis).hip(snap.masks->layer)) return "layer 0 is not a dense layer";
                      if (s.mask_view.show_hip_on_dense) return "the dense layer shows HiP's picks by default";
                      shot("dense-layer");
                      return "";
                    },
                    60, 3});
  // Token view on the right, the locality plots on the left (so the mask colours counted in the
  // screenshot come from the token view alone).
  steps_.push_back({"token view: a query's attention over the prompt",
                    [](AppState& s) {
                      s.layer = 1;
                      s.focus_panel = "locality";
                    },
                    fresh_masks(1),
                    [this, shot, n = std::make_shared<int>(0)](AppState& s, const Snapshot& snap) -> std::string {
                      if ((*n)++ == 0) {
                        s.focus_panel = "tokens";
                        s.query_token = static_cast<int>(snap.masks->source->tokens() * 2 / 3);
                        mouse_x = 0.01f, mouse_y = 0.99f;
                        return kMore;
                      }
                      if (!s.focus_panel.empty() || *n < 4) return kMore;
                      const hip::AttentionInputs in = snap.analysis->inputs(1);
                      const std::vector<double> row = dense_probability_row(in, snap.analysis->layer_math(1), s.head, s.query_token);
                      double sum = 0;
                      for (double p : row) sum += p;
                      if (static_cast<int>(row.size()) != s.query_token + 1 || std::abs(sum - 1) > 1e-9)
                        return "the token view's row is not a causal softmax";
                      shot("token");
                      return "";
                    },
                    60, 2});
  // Clicking a token picks it as the query and its query block (from the first search step): the first prompt token ("<s>") at the top left of the
  // HiP column (where the 1600x1000 test window's layout puts it).
  steps_.push_back({"token view: clicking a token makes it the query and moves the query block",
                    [this](AppState& s) {
                      mouse_x = 0.815f, mouse_y = 0.155f;
                      s.query_block = 3, s.step = 1;  // the click must move both to the first token's
                    },
                    fresh_masks(1),
                    [this, n = std::make_shared<int>(0)](AppState& s, const Snapshot&) -> std::string {
                      switch ((*n)++) {
                        case 0: return kMore;  // the mouse arrives (hover)
                        case 1: mouse_down = true; return kMore;
                        case 2: mouse_down = false; return kMore;
                        case 3: return kMore;
                        default:
                          mouse_x = 0.01f, mouse_y = 0.99f;
                          if (s.query_token != 0) return fmt_fail("a click on the first token picked query token %lld", s.query_token);
                          if (s.query_block != 0 || s.step != 0)
                            return fmt_fail("a click on the first token left the stepper at query block %lld, step %lld",
                                            s.query_block, s.step);
                          return "";
                      }
                    },
                    30, 2});
  steps_.push_back({"all heads of a layer as small multiples",
                    [](AppState& s) { s.focus_panel = "heads"; },
                    fresh_masks(1),
                    [shot, n = std::make_shared<int>(0)](AppState& s, const Snapshot& snap) -> std::string {
                      if (!s.focus_panel.empty() || ++*n < 3) return kMore;
                      if (snap.masks->hip.heads != snap.model->n_heads) return "the layer's masks do not hold every head";
                      shot("heads");
                      return "";
                    },
                    60, 2});
  // Clicking a small multiple opens that head in the mask view (head 1: the second one, top right).
  steps_.push_back({"all heads: clicking one opens it",
                    [this](AppState&) { mouse_x = 0.92f, mouse_y = 0.22f; },
                    fresh_masks(1),
                    [this, n = std::make_shared<int>(0)](AppState& s, const Snapshot&) -> std::string {
                      switch ((*n)++) {
                        case 0: return kMore;
                        case 1: mouse_down = true; return kMore;
                        case 2: mouse_down = false; return kMore;
                        case 3: return kMore;
                        default:
                          mouse_x = 0.01f, mouse_y = 0.99f;
                          if (s.head != 1) return fmt_fail("a click on head 1's mask selected head %lld", s.head);
                          s.head = 0;
                          s.focus_panel = "heads";  // back for the next steps' layout
                          return "";
                      }
                    },
                    60, 2});
  steps_.push_back({"side by side, linked and zoomed",
                    [this](AppState& s) {
                      s.focus_panel = "generate";
                      mouse_x = 0.34f;  // over the dense image: the shared cursor shows on both
                      mouse_y = 0.28f;
                    },
                    fresh_masks(1),
                    [shot, n = std::make_shared<int>(0)](AppState& s, const Snapshot& snap) -> std::string {
                      const double T = static_cast<double>(snap.masks->source->tokens());
                      if ((*n)++ == 0) {
                        s.focus_panel = "compare";
                        s.mask_view.span = T / 3;
                        s.mask_view.x0 = T / 3;
                        s.mask_view.y0 = T / 2;
                        return kMore;
                      }
                      if (!s.focus_panel.empty() || *n < 5) return kMore;
                      if (!(s.mask_view.span < T * 0.5)) return "the linked view did not stay zoomed";
                      shot("linked");
                      return "";
                    },
                    60, 2});
  // A knob's tooltip opens beside the sidebar, so it never covers the sliders below it.
  steps_.push_back({"slider tooltips sit beside the sidebar",
                    [this](AppState& s) {
                      s.focus_panel = "mask";
                      mouse_x = 0.05f, mouse_y = 0.48f;  // over the k slider (1600x1000)
                    },
                    [](const AppState&, const Snapshot&) { return true; },
                    [this, n = std::make_shared<int>(0)](AppState&, const Snapshot&) -> std::string {
                      if (++*n < 4) return kMore;  // hover long enough for the tooltip
                      float sidebar_right = -1, tooltip_left = -1;
                      for (ImGuiWindow* w : GImGui->Windows) {
                        if (!w->Active) continue;
                        const std::string name = w->Name;
                        const size_t slash = name.rfind('/');
                        if (slash != std::string::npos && name.compare(slash + 1, 9, "##sidebar") == 0) sidebar_right = w->Pos.x + w->Size.x;
                        if (w->Flags & ImGuiWindowFlags_Tooltip) tooltip_left = w->Pos.x;
                      }
                      mouse_x = 0.01f, mouse_y = 0.99f;
                      if (tooltip_left < 0) return "hovering the k slider showed no tooltip";
                      if (tooltip_left < sidebar_right) return fmt_fail("the tooltip starts at x %lld, inside the sidebar (ends at %lld)",
                                                                         static_cast<long long>(tooltip_left), static_cast<long long>(sidebar_right));
                      return "";
                    },
                    30, 2});
  // The trial's small screen: the sidebar shows every control (the view sliders included) without
  // scrolling, and the mask view's header fits.
  steps_.push_back({"at 1280x720 the sidebar needs no scrolling",
                    [this](AppState& s) {
                      window_width = 1280, window_height = 720;
                      s.focus_panel = "mask";
                      s.mask_view = MaskViewState{};
                    },
                    [](const AppState&, const Snapshot&) { return true; },
                    [this, shot, n = std::make_shared<int>(0)](AppState&, const Snapshot&) -> std::string {
                      if (++*n < 5) return kMore;  // the resize arrives and the layout settles
                      const ImVec2 size = ImGui::GetMainViewport()->Size;
                      if (static_cast<int>(size.x) != 1280 || static_cast<int>(size.y) != 720)
                        return fmt_fail("the window is %lld x %lld, not 1280 x 720", static_cast<long long>(size.x), static_cast<long long>(size.y));
                      if (*n == 5) {  // the screenshot first, so a failure can be looked at
                        shot("1280x720");
                        return kMore;
                      }
                      const float scroll = child_scroll_max("##sidebar");
                      window_width = 1600, window_height = 1000;
                      if (scroll < 0) return "no sidebar window";
                      if (scroll > 0.5f) return fmt_fail("the sidebar scrolls by %lld px at 1280x720", static_cast<long long>(scroll));
                      return "";
                    },
                    30, 2});
  steps_.push_back({"look at the screenshots: each shows its view",
                    [this](AppState& s) {
                      mouse_x = 0.01f, mouse_y = 0.99f;
                      s.mask_view = MaskViewState{};
                      s.focus_panel = "mask";
                    },
                    [](const AppState&, const Snapshot&) { return true; },
                    [this](AppState&, const Snapshot&) -> std::string {
                      if (screenshot_.empty()) return "";
                      const viz::MaskPalette p = viz::dark_mask_palette();
                      auto load = [&](const char* suffix, DecodedPng& png) {
                        png = decode_png_file(with_suffix(screenshot_, suffix));
                        return png.error;
                      };
                      DecodedPng main, stale, dense, token, heads, linked;
                      for (auto [suffix, png] : {std::pair{"mask", &main}, {"stale", &stale}, {"dense-layer", &dense}, {"token", &token},
                                                 {"heads", &heads}, {"linked", &linked}})
                        if (const std::string e = load(suffix, *png); !e.empty()) return e;
                      // A result of refused settings is greyed: its mask colours are blended away.
                      const int64_t fresh_hits = count_color(main, p.hit), stale_hits = count_color(stale, p.hit);
                      std::printf("self-test:   hit-colour pixels: fresh mask %lld, stale mask %lld\n", static_cast<long long>(fresh_hits),
                                  static_cast<long long>(stale_hits));
                      if (fresh_hits < 1000 || stale_hits * 4 > fresh_hits) return "the stale mask is not greyed";
                      // A dense layer fills its causal triangle with the dense-layer colour; a sparse
                      // one has none of it.
                      const int64_t dense_px = count_color(dense, p.dense_layer), sparse_px = count_color(main, p.dense_layer);
                      std::printf("self-test:   dense-layer-colour pixels: dense layer %lld, sparse layer %lld\n", static_cast<long long>(dense_px),
                                  static_cast<long long>(sparse_px));
                      if (dense_px < 4 * std::max<int64_t>(1, sparse_px)) return "the dense layer is not drawn dense";
                      // The token view's HiP column: tokens on the hit colour (the left pane shows plots).
                      const int64_t token_hits = count_color(token, p.hit);
                      if (token_hits < 200) return fmt_fail("the token view shows %lld hit-coloured pixels", token_hits);
                      const int64_t token_warm = count_warm(token, p.hit);
                      if (token_warm < 200) return fmt_fail("the token view's dense column is not coloured (%lld warm pixels)", token_warm);
                      const int64_t head_hits = count_color(heads, p.hit);
                      if (head_hits < 1000) return fmt_fail("the heads view shows %lld hit-coloured pixels", head_hits);
                      const int64_t linked_warm = count_warm(linked, p.hit), linked_hits = count_color(linked, p.hit);
                      std::printf("self-test:   token view %lld hit / %lld warm px, heads %lld hit px, linked %lld hit / %lld warm px\n",
                                  static_cast<long long>(token_hits), static_cast<long long>(token_warm), static_cast<long long>(head_hits),
                                  static_cast<long long>(linked_hits), static_cast<long long>(linked_warm));
                      if (linked_hits < 1000 || linked_warm < 5000) return "the linked view lacks the mask or the log-coloured dense image";
                      return "";
                    },
                    30, 3});
}

// After File > Export view...: the mask figure, decoded from its file, in the preview window.
void SelfTest::build_export_shot_steps() {
  steps_.push_back({"the exported mask figure, read back, on screen",
                    [](AppState&) {},
                    [](const AppState& s, const Snapshot&) { return !s.file_task; },
                    [this, n = std::make_shared<int>(0)](AppState& s, const Snapshot&) -> std::string {
                      if (s.preview_path.empty()) return "the export opened no preview of its figure";
                      const DecodedPng png = decode_png_file(s.preview_path);
                      if (!png.error.empty()) return png.error;
                      if (std::max(png.width, png.height) != 256) return fmt_fail("the figure is %lld x %lld, not 256 px", png.width, png.height);
                      const int64_t hits = count_color(png, viz::light_mask_palette().hit);
                      if (hits < 50 || count_color(png, viz::pack_rgba8(255, 255, 255)) < png.width * 10)
                        return "the figure lacks the paper palette (hits on a white page)";
                      if ((*n)++ < 3) return kMore;  // the window appears and settles
                      if (*n == 4) {
                        if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "export");
                        return kMore;
                      }
                      if (*n < 7) return kMore;
                      if (!screenshot_.empty()) {
                        const DecodedPng shot = decode_png_file(with_suffix(screenshot_, "export"));
                        if (!shot.error.empty()) return shot.error;
                        const int64_t on_screen = count_color(shot, viz::light_mask_palette().hit);
                        std::printf("self-test:   exported figure %dx%d: %lld hit px in the file, %lld on screen\n", png.width, png.height,
                                    static_cast<long long>(hits), static_cast<long long>(on_screen));
                        if (on_screen < hits) return "the screen does not show the exported figure 1:1";
                      }
                      s.preview_path.clear();
                      s.head = 0;  // the export step viewed head 1, Delta 5
                      s.delta = 8;
                      return "";
                    },
                    60, 2});
}

}  // namespace hipstudio::gui
