// Keyboard shortcuts: the one table, the global handler and the help window that lists them.
// Single keys act only while no text field has the keyboard. Dear ImGui 1.86 indexes keys by the
// backend's codes (GLFW's here).
#include "app/gui/shortcuts.h"

#include "app/gui/widgets.h"

#include <cstring>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include "app/gui/layout.h"
#include "app/gui/worker.h"

namespace hipstudio::gui {

const std::vector<Shortcut>& shortcuts() {
  static const std::vector<Shortcut> table = {
      {"F1", "this help", GLFW_KEY_F1, false, Action::Help},
      {"Ctrl+1", "Mask view", GLFW_KEY_1, true, Action::FocusPanel, "mask"},
      {"Ctrl+2", "Iterations", GLFW_KEY_2, true, Action::FocusPanel, "stepper"},
      {"Ctrl+3", "Side by side", GLFW_KEY_3, true, Action::FocusPanel, "compare"},
      {"Ctrl+4", "Score locality", GLFW_KEY_4, true, Action::FocusPanel, "locality"},
      {"Ctrl+5", "KV cache", GLFW_KEY_5, true, Action::FocusPanel, "kvcache"},
      {"Ctrl+6", "Latency", GLFW_KEY_6, true, Action::FocusPanel, "latency"},
      {"Ctrl+7", "Generate", GLFW_KEY_7, true, Action::FocusPanel, "generate"},
      {"Ctrl+8", "All heads", GLFW_KEY_8, true, Action::FocusPanel, "heads"},
      {"Ctrl+9", "Token view", GLFW_KEY_9, true, Action::FocusPanel, "tokens"},
      {"Ctrl+B", "Compare captures (A and B)", GLFW_KEY_B, true, Action::FocusPanel, "compare_captures"},
      {"Ctrl+0", "Sweep", GLFW_KEY_0, true, Action::FocusPanel, "sweep"},
      {"Ctrl+L", "Layers x heads", GLFW_KEY_L, true, Action::FocusPanel, "grid"},
      {"Ctrl+M", "Methods (compare selection methods)", GLFW_KEY_M, true, Action::FocusPanel, "methods"},
      {"Ctrl+Enter", "run the edited prompt", GLFW_KEY_ENTER, true, Action::RunPrompt, nullptr, false},
      {"Esc", "cancel the running computation", GLFW_KEY_ESCAPE, false, Action::Cancel},
      {"Ctrl+G", "generate with dense attention and HiP", GLFW_KEY_G, true, Action::Generate},
      {"Right", "next pruning iteration", GLFW_KEY_RIGHT, false, Action::NextStep},
      {"Left", "previous pruning iteration", GLFW_KEY_LEFT, false, Action::PrevStep},
      {"Home", "first iteration", GLFW_KEY_HOME, false, Action::FirstStep},
      {"End", "last iteration", GLFW_KEY_END, false, Action::LastStep},
      {"Space", "play / pause the iterations", GLFW_KEY_SPACE, false, Action::Play},
      {"[", "previous head", GLFW_KEY_LEFT_BRACKET, false, Action::PrevHead},
      {"]", "next head", GLFW_KEY_RIGHT_BRACKET, false, Action::NextHead},
      {"PgUp", "previous layer", GLFW_KEY_PAGE_UP, false, Action::PrevLayer},
      {"PgDn", "next layer", GLFW_KEY_PAGE_DOWN, false, Action::NextLayer},
      {"Up", "previous query block", GLFW_KEY_UP, false, Action::PrevBlock},
      {"Down", "next query block", GLFW_KEY_DOWN, false, Action::NextBlock},
      {"F (over the mask)", "fit the whole prompt; the wheel zooms and dragging pans", GLFW_KEY_F, false, Action::MaskFit, nullptr, false},
      {"+ (over the mask)", "zoom in", GLFW_KEY_EQUAL, false, Action::MaskZoomIn, nullptr, false},
      {"- (over the mask)", "zoom out", GLFW_KEY_MINUS, false, Action::MaskZoomOut, nullptr, false},
      {"Ctrl+T", "light / dark theme", GLFW_KEY_T, true, Action::Theme},
      {"Ctrl+Q", "quit", GLFW_KEY_Q, true, Action::Quit},
  };
  return table;
}

const char* panel_shortcut(const char* panel_id) {
  for (const Shortcut& k : shortcuts())
    if (k.action == Action::FocusPanel && std::strcmp(k.panel, panel_id) == 0) return k.keys;
  return nullptr;
}

bool shortcut_pressed(Action action) {
  for (const Shortcut& k : shortcuts())
    if (k.action == action) return ImGui::GetIO().KeyCtrl == k.ctrl && ImGui::IsKeyPressed(k.key, true);
  return false;
}

void handle_shortcuts(PanelContext& ctx, LayoutActions& act) {
  AppState& s = ctx.state;
  const ImGuiIO& io = ImGui::GetIO();
  for (const Shortcut& k : shortcuts()) {
    if (!k.global || io.KeyCtrl != k.ctrl || !ImGui::IsKeyPressed(k.key, true)) continue;
    // Single keys belong to a text field while it has the keyboard (F1 and Esc always act).
    if (!k.ctrl && io.WantTextInput && k.action != Action::Help && k.action != Action::Cancel) continue;
    switch (k.action) {
      case Action::Help: s.show_help = !s.show_help; break;
      case Action::Cancel:
        if (s.show_help) {
          s.show_help = false;
        } else {
          ctx.worker.cancel();
        }
        break;
      case Action::Generate: ++s.generate_id; break;
      case Action::Theme:
        s.dark = !s.dark;
        act.theme_changed = true;
        break;
      case Action::Quit: act.quit = true; break;
      case Action::FocusPanel: s.focus_panel = k.panel; break;
      case Action::NextStep: ++s.step; break;  // clamped by the stepper
      case Action::PrevStep:
        if (s.step > 0) --s.step;
        break;
      case Action::FirstStep: s.step = 0; break;
      case Action::LastStep: s.step = 1 << 20; break;
      case Action::Play: s.playing = !s.playing; break;
      case Action::PrevHead:
        if (s.head > 0) --s.head;
        break;
      case Action::NextHead: ++s.head; break;  // clamped by the view panel
      case Action::PrevLayer:
        if (s.layer > 0) --s.layer;
        break;
      case Action::NextLayer: ++s.layer; break;
      case Action::PrevBlock:
        if (s.query_block > 0) --s.query_block, s.step = 0;
        break;
      case Action::NextBlock: ++s.query_block, s.step = 0; break;
      default: break;  // panel-local: the panel handles it
    }
  }
}

void draw_help(PanelContext& ctx, const std::vector<std::unique_ptr<Panel>>& /*panels*/) {
  AppState& s = ctx.state;
  fit_next_window(ImVec2(ImGui::GetFontSize() * 40, 0));
  if (ImGui::Begin("Help: HiP Studio", &s.show_help, ImGuiWindowFlags_NoCollapse)) {
    keep_window_inside_viewport();
    ImGui::TextWrapped(
        "HiP Studio runs the prompt through the model twice, with dense attention and with HiP (hierarchically "
        "pruned attention), and shows what HiP selected, how it searched, and what it cost. Change a parameter in "
        "the sidebar and only the affected results are recomputed on a background thread; results being "
        "recomputed, or that no longer match refused settings, are shown greyed. Drop a model file / folder or a .txt "
        "prompt on the window to open it.");
    ImGui::Spacing();
    if (ImGui::BeginTable("##keys", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
      ImGui::TableSetupColumn("keys", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 12);
      ImGui::TableSetupColumn("action");
      for (const Shortcut& k : shortcuts()) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(k.keys);
        ImGui::TableNextColumn();
        if (k.action == Action::FocusPanel) {
          ImGui::TextWrapped("show the %s panel", k.what);
        } else {
          ImGui::TextWrapped("%s", k.what);
        }
      }
      ImGui::EndTable();
    }
    ImGui::Spacing();
    ImGui::TextDisabled("Settings and layout: ~/.config/hipstudio (settings.json, imgui.ini)");
  }
  ImGui::End();
}

}  // namespace hipstudio::gui
