// Keyboard shortcuts and the help window that lists them. Single keys act only while no text field
// has the keyboard. Dear ImGui 1.86 indexes keys by the backend's codes (GLFW's here).
#include <GLFW/glfw3.h>
#include <imgui.h>

#include "app/gui/layout.h"
#include "app/gui/worker.h"

namespace hipstudio::gui {

namespace {

struct Shortcut {
  const char* keys;
  const char* what;
};

constexpr Shortcut kShortcuts[] = {
    {"F1", "this help"},
    {"Ctrl+1 .. Ctrl+7", "Mask view, Iterations, Side by side, Score locality, KV cache, Latency, Generate"},
    {"Ctrl+Enter", "run the edited prompt"},
    {"Esc", "cancel the running computation"},
    {"Ctrl+G", "generate with dense attention and HiP"},
    {"Left / Right", "previous / next pruning iteration"},
    {"Home / End", "first / last iteration"},
    {"Space", "play / pause the iterations"},
    {"[ / ]", "previous / next head"},
    {"PgUp / PgDn", "previous / next layer"},
    {"Up / Down", "previous / next query block"},
    {"F, +, - (over the mask)", "fit, zoom in, zoom out; the wheel zooms and dragging pans"},
    {"Ctrl+T", "light / dark theme"},
    {"Ctrl+Q", "quit"},
};

}  // namespace

void handle_shortcuts(PanelContext& ctx, LayoutActions& act) {
  AppState& s = ctx.state;
  const ImGuiIO& io = ImGui::GetIO();
  auto pressed = [](int key) { return ImGui::IsKeyPressed(key, true); };
  if (pressed(GLFW_KEY_F1)) s.show_help = !s.show_help;
  if (pressed(GLFW_KEY_ESCAPE)) {
    if (s.show_help) {
      s.show_help = false;
    } else {
      ctx.worker.cancel();
    }
  }
  if (io.KeyCtrl) {
    static const char* order[] = {"mask", "stepper", "compare", "locality", "kvcache", "latency", "generate"};
    for (int i = 0; i < 7; ++i)
      if (pressed(GLFW_KEY_1 + i)) s.focus_panel = order[i];
    if (pressed(GLFW_KEY_G)) ++s.generate_id;
    if (pressed(GLFW_KEY_T)) {
      s.dark = !s.dark;
      act.theme_changed = true;
    }
    if (pressed(GLFW_KEY_Q)) act.quit = true;
    return;
  }
  if (io.WantTextInput) return;
  if (pressed(GLFW_KEY_RIGHT)) ++s.step;  // clamped by the stepper
  if (pressed(GLFW_KEY_LEFT) && s.step > 0) --s.step;
  if (pressed(GLFW_KEY_HOME)) s.step = 0;
  if (pressed(GLFW_KEY_END)) s.step = 1 << 20;
  if (pressed(GLFW_KEY_SPACE)) s.playing = !s.playing;
  if (pressed(GLFW_KEY_LEFT_BRACKET) && s.head > 0) --s.head;
  if (pressed(GLFW_KEY_RIGHT_BRACKET)) ++s.head;  // clamped by the parameters panel
  if (pressed(GLFW_KEY_PAGE_UP) && s.layer > 0) --s.layer;
  if (pressed(GLFW_KEY_PAGE_DOWN)) ++s.layer;
  if (pressed(GLFW_KEY_UP) && s.query_block > 0) --s.query_block, s.step = 0;
  if (pressed(GLFW_KEY_DOWN)) ++s.query_block, s.step = 0;
}

void draw_help(PanelContext& ctx, const std::vector<std::unique_ptr<Panel>>& /*panels*/) {
  AppState& s = ctx.state;
  ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 40, 0), ImGuiCond_Appearing);
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  if (ImGui::Begin("Help: HiP Studio", &s.show_help, ImGuiWindowFlags_NoCollapse)) {
    ImGui::TextWrapped(
        "HiP Studio runs the prompt through the model twice, with dense attention and with HiP (hierarchically "
        "pruned attention), and shows what HiP selected, how it searched, and what it cost. Change a parameter in "
        "the sidebar and only the affected results are recomputed on a background thread; results being "
        "recomputed are shown greyed. Drop a model file / folder or a .txt prompt on the window to open it.");
    ImGui::Spacing();
    if (ImGui::BeginTable("##keys", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
      ImGui::TableSetupColumn("keys", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 12);
      ImGui::TableSetupColumn("action");
      for (const auto& k : kShortcuts) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(k.keys);
        ImGui::TableNextColumn();
        ImGui::TextWrapped("%s", k.what);
      }
      ImGui::EndTable();
    }
    ImGui::Spacing();
    ImGui::TextDisabled("Settings and layout: ~/.config/hipstudio (settings.json, imgui.ini)");
  }
  ImGui::End();
}

}  // namespace hipstudio::gui
