#pragma once
// A panel is one file drawing one view. The layout owns the window (tab, pane, focus); a panel
// draws only its content from the UI state and the frame's snapshot (ImHex's view base class).
#include <memory>
#include <string>
#include <vector>

#include "app/gui/app_state.h"
#include "app/gui/results.h"
#include "app/gui/theme.h"

namespace hipstudio::gui {

class Worker;

struct PanelContext {
  AppState& state;
  const Snapshot& snap;  // taken once at the top of the frame
  Worker& worker;
  const Theme& theme;
  double now = 0;        // seconds since start
  float dt = 0;          // seconds since the last frame
};

// Whether a view's result no longer matches the sliders: the worker is recomputing it, or the
// sidebar's settings are refused and the result is of the last valid ones. Views grey it.
bool view_stale(const PanelContext& ctx, int stage);
bool view_stale(const AppState& state, const Snapshot& snap, int stage);
// What to say beside a stale view (gui_messages.h): the refused settings' rule, "(updating)" while
// the worker runs, or the failure that keeps it old.
std::string stale_reason(const PanelContext& ctx, int stage);

enum class PaneSlot { Sidebar, Left, Right };

class Panel {
 public:
  virtual ~Panel() = default;
  virtual const char* id() const = 0;     // stable: settings and the self-test use it
  virtual const char* title() const = 0;  // tab / header label
  virtual PaneSlot default_slot() const = 0;
  virtual void draw(PanelContext& ctx) = 0;

  bool open = true;
  PaneSlot slot = PaneSlot::Left;
};

// The registry: every panel, in menu order. Defined in panels.cpp, the one place panels are listed.
std::vector<std::unique_ptr<Panel>> make_panels();

// Constructors of the panels (one file each).
std::unique_ptr<Panel> make_view_panel();
std::unique_ptr<Panel> make_load_panel();
std::unique_ptr<Panel> make_params_panel();
std::unique_ptr<Panel> make_mask_panel();
std::unique_ptr<Panel> make_stepper_panel();
std::unique_ptr<Panel> make_compare_panel();
std::unique_ptr<Panel> make_compare_captures_panel();
std::unique_ptr<Panel> make_locality_panel();
std::unique_ptr<Panel> make_kvcache_panel();
std::unique_ptr<Panel> make_latency_panel();
std::unique_ptr<Panel> make_generate_panel();
std::unique_ptr<Panel> make_token_panel();
std::unique_ptr<Panel> make_heads_panel();
std::unique_ptr<Panel> make_sweep_panel();
std::unique_ptr<Panel> make_methods_panel();
std::unique_ptr<Panel> make_grid_panel();

}  // namespace hipstudio::gui
