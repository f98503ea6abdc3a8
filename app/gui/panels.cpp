// The panel registry: add a panel here (and in panel.h) and the layout, the View menu, the
// settings file and the self-test pick it up.
#include "app/gui/panel.h"

#include "app/gui/gui_messages.h"

namespace hipstudio::gui {

std::vector<std::unique_ptr<Panel>> make_panels() {
  std::vector<std::unique_ptr<Panel>> p;
  p.push_back(make_view_panel());
  p.push_back(make_load_panel());
  p.push_back(make_params_panel());
  p.push_back(make_mask_panel());
  p.push_back(make_compare_panel());
  p.push_back(make_compare_captures_panel());
  p.push_back(make_heads_panel());
  p.push_back(make_token_panel());
  p.push_back(make_locality_panel());
  p.push_back(make_stepper_panel());
  p.push_back(make_kvcache_panel());
  p.push_back(make_latency_panel());
  p.push_back(make_generate_panel());
  p.push_back(make_sweep_panel());
  p.push_back(make_methods_panel());
  p.push_back(make_grid_panel());
  for (auto& panel : p) panel->slot = panel->default_slot();
  return p;
}

bool view_stale(const AppState& state, const Snapshot& snap, int stage) {
  return snap.stale[stage] || (!state.capture && !state.invalid.empty());
}

bool view_stale(const PanelContext& ctx, int stage) { return view_stale(ctx.state, ctx.snap, stage); }

std::string stale_reason(const PanelContext& ctx, int stage) { return stale_reason(ctx.state, ctx.snap, stage); }

}  // namespace hipstudio::gui
