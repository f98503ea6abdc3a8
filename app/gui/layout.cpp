#include "app/gui/layout.h"

#include <map>
#include <algorithm>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/gui/capture_view.h"
#include "app/gui/export_preview.h"
#include "app/gui/file_browser.h"
#include "app/gui/files.h"
#include "app/gui/save_export.h"
#include "app/gui/shortcuts.h"
#include "app/gui/widgets.h"
#include "app/gui/worker.h"

namespace hipstudio::gui {

namespace {

void draw_menu(PanelContext& ctx, std::vector<std::unique_ptr<Panel>>& panels, LayoutActions& act) {
  AppState& s = ctx.state;
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Default model (stories15M)", nullptr, false, !s.capture)) s.model_path.clear();
    if (ImGui::MenuItem("Open capture...")) s.show_open_capture = true;
    if (ImGui::MenuItem("Close capture", nullptr, false, s.capture != nullptr)) close_capture(s);
    // Saving is disabled while a capture is open (the file on disk already is that capture).
    const std::string no_save = save_unavailable(s, ctx.snap);
    if (ImGui::MenuItem("Save capture...", nullptr, false, no_save.empty())) s.show_save_capture = true;
    if (!no_save.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", no_save.c_str());
    const bool can_export = ctx.snap.analysis && !s.file_task && !ctx.snap.analysis->model.synthetic;
    if (ImGui::MenuItem("Export view...", nullptr, false, can_export)) s.show_export_view = true;
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) act.quit = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (auto& p : panels) {
      if (p->slot == PaneSlot::Sidebar) continue;
      if (ImGui::MenuItem(p->title(), panel_shortcut(p->id()), p->open)) {
        p->open = !p->open;
        if (p->open) s.focus_panel = p->id();
      }
    }
    ImGui::Separator();
    if (ImGui::BeginMenu("Move to the other pane")) {
      for (auto& p : panels) {
        if (p->slot == PaneSlot::Sidebar) continue;
        if (ImGui::MenuItem(p->title(), p->slot == PaneSlot::Left ? "left -> right" : "right -> left"))
          p->slot = p->slot == PaneSlot::Left ? PaneSlot::Right : PaneSlot::Left;
      }
      ImGui::EndMenu();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Dark theme", "Ctrl+T", s.dark)) {
      s.dark = !s.dark;
      act.theme_changed = true;
    }
    if (ImGui::MenuItem("Colour-blind-safe mask colours", nullptr, !s.classic_mask_colors)) {
      s.classic_mask_colors = !s.classic_mask_colors;
      act.theme_changed = true;
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Okabe-Ito outcome colours (hit, false pick, miss, sink, window), told apart with any colour vision;\n"
                        "off: the earlier yellow / orange / pink set. Exports always use the colour-blind-safe set.");
    float scale = s.ui_scale;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    if (ImGui::SliderFloat("UI scale", &scale, 0.75f, 2.0f, "%.2f")) s.ui_scale = scale;
    if (ImGui::IsItemDeactivatedAfterEdit()) act.scale_changed = true;
    // Far from File > Export, and it asks first: it throws away the knobs, theme and layout.
    ImGui::Separator();
    if (ImGui::MenuItem("Reset layout and settings...")) s.show_reset_confirm = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    if (ImGui::MenuItem("Shortcuts and help", "F1")) s.show_help = true;
    ImGui::EndMenu();
  }
  // Right side of the menu bar: what produced the numbers on screen.
  if (ctx.snap.model) {
    const std::string dev = ctx.snap.model->display_name + " on " + ctx.snap.model->device;
    const float w = ImGui::CalcTextSize(dev.c_str()).x;
    ImGui::SameLine(ImGui::GetWindowWidth() - w - ImGui::GetFontSize());
    ImGui::TextDisabled("%s", dev.c_str());
  }
  ImGui::EndMenuBar();
}

// The pane's tabs wrap onto more rows when they do not fit its width (ImGui's tab bar would scroll
// and hide some at 1280x720): one tab-coloured button per open panel, the selected one in the
// active tab colour, then the selected panel. Panels open, close and move in the View menu.
void draw_pane(PanelContext& ctx, std::vector<std::unique_ptr<Panel>>& panels, PaneSlot slot, const char* id, LayoutActions& act) {
  AppState& s = ctx.state;
  static std::map<std::string, std::string> selected;  // pane id -> the id of its shown panel
  std::vector<Panel*> open;
  for (auto& p : panels)
    if (p->slot == slot && p->open) open.push_back(p.get());
  if (open.empty()) return;
  std::string& sel = selected[id];
  for (Panel* p : open)
    if (s.focus_panel == p->id()) sel = p->id(), s.focus_panel.clear();
  if (std::none_of(open.begin(), open.end(), [&](const Panel* p) { return sel == p->id(); })) sel = open.front()->id();
  ImGui::PushID(id);
  const ImGuiStyle& st = ImGui::GetStyle();
  const float right = ImGui::GetCursorPosX() + ImGui::GetContentRegionAvail().x;
  ImGui::PushStyleVar(ImGuiStyleVar_FrameRounding, st.TabRounding);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(st.ItemInnerSpacing.x * 0.5f, st.ItemInnerSpacing.y * 0.5f));
  for (size_t i = 0; i < open.size(); ++i) {
    Panel* p = open[i];
    const float w = ImGui::CalcTextSize(p->title()).x + st.FramePadding.x * 2;
    if (i > 0) {
      ImGui::SameLine();
      if (ImGui::GetCursorPosX() + w > right) ImGui::NewLine();
    }
    const bool on = sel == p->id();
    ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(on ? ImGuiCol_TabActive : ImGuiCol_Tab));
    ImGui::PushStyleColor(ImGuiCol_ButtonHovered, ImGui::GetStyleColorVec4(ImGuiCol_TabHovered));
    ImGui::PushStyleColor(ImGuiCol_ButtonActive, ImGui::GetStyleColorVec4(ImGuiCol_TabActive));
    if (ImGui::Button(p->title())) sel = p->id();
    ImGui::PopStyleColor(3);
  }
  ImGui::PopStyleVar(2);
  ImGui::Separator();
  for (Panel* p : open) {
    if (sel != p->id()) continue;
    ImGui::BeginChild("##content", ImVec2(0, 0), false);
    p->draw(ctx);
    act.drawn.push_back(p->id());
    ImGui::EndChild();
  }
  ImGui::PopID();
}

// The banner over the panes while a capture is shown: what it is, and the way back to live mode.
void draw_capture_banner(PanelContext& ctx) {
  AppState& s = ctx.state;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.warn));
  ImGui::TextUnformatted(s.capture->banner.c_str());
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Parameters, Run and Generate are disabled: the views show the file.");
  ImGui::SameLine();
  if (ImGui::SmallButton("Close capture")) close_capture(s);
}

void error_text(const PanelContext& ctx, const std::string& error) {
  if (error.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ctx.theme.bad));
  ImGui::TextWrapped("%s", error.c_str());
  ImGui::PopStyleColor();
}

// File > Open capture...: ImGui 1.86 has no file dialog, so a path field (dropping a .hipcap on the
// window does the same). A damaged file keeps the modal open with the reader's error.
void draw_open_capture_modal(PanelContext& ctx) {
  AppState& s = ctx.state;
  std::string& path = s.dialogs.open_path;
  std::string& error = s.dialogs.open_error;
  if (s.show_open_capture) {
    ImGui::OpenPopup("Open capture");
    s.show_open_capture = false;
    error.clear();
  }
  fit_next_window(ImVec2(ImGui::GetFontSize() * 36, 0));
  if (!ImGui::BeginPopupModal("Open capture", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  keep_window_inside_viewport();
  ImGui::TextUnformatted("Capture file (.hipcap), written by `hipstudio capture`:");
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  ImGui::SetNextItemWidth(-1);
  const bool enter = ImGui::InputTextWithHint("##capture_path", "path/to/run.hipcap", &path,
                                              ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_AutoSelectAll);
  error_text(ctx, error);
  if (ImGui::Button("Open") || enter) {
    if (open_capture_file(s, path)) {
      ImGui::CloseCurrentPopup();
    } else {
      error = s.status_message;
    }
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

// File > Save capture...: a path field; the capture is built and written in the background (the
// status line shows progress and the result), so the modal closes at once. The field opens with
// its text selected, so typing replaces the default path instead of splicing into it.
void draw_save_capture_modal(PanelContext& ctx, const std::vector<std::unique_ptr<Panel>>& panels) {
  AppState& s = ctx.state;
  std::string& path = s.dialogs.save_path;
  std::string& error = s.dialogs.save_error;
  // The file browser picks the path (it asks about a missing folder or a file it replaces itself);
  // a typed path asks the same before the save starts.
  static FileBrowser browser;
  static SaveQuestion question;
  if (s.show_save_capture) {
    ImGui::OpenPopup("Save capture");
    s.show_save_capture = false;
    path = default_capture_path();
    error.clear();
    question.forget();
  }
  fit_next_window(ImVec2(ImGui::GetFontSize() * 36, 0));
  if (!ImGui::BeginPopupModal("Save capture", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  keep_window_inside_viewport();
  const std::vector<std::string> views = open_capture_views(panels, s);
  std::string list;
  for (const auto& v : views) list += (list.empty() ? "" : ", ") + v;
  // The blocks counted here are the ones the save writes (traceable_blocks), listed by name.
  const std::vector<SteppedBlock> blocks = traceable_blocks(s, ctx.snap);
  std::string traced;
  for (size_t i = 0; i < blocks.size() && i < 6; ++i)
    traced += fmt("%sL%lld H%lld QB%lld", i ? ", " : "", static_cast<long long>(blocks[i].layer), static_cast<long long>(blocks[i].head),
                  static_cast<long long>(blocks[i].query_block));
  if (blocks.size() > 6) traced += ", ...";
  ImGui::TextWrapped("Capture of the live run (reopens without the model): views %s; %zu stepped query block%s traced%s%s%s.", list.c_str(),
                     blocks.size(), blocks.size() == 1 ? "" : "s", blocks.empty() ? "" : " (", traced.c_str(), blocks.empty() ? "" : ")");
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 6);
  const bool enter = ImGui::InputTextWithHint("##save_path", "~/run.hipcap", &path,
                                              ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_AutoSelectAll);
  ImGui::SameLine();
  if (ImGui::Button("Browse...##save")) browser.open(BrowseFor::kSaveFile, "Save capture", expand_home(path), {".hipcap"});
  const bool browsed = browser.draw(s.recent_folders, ctx.theme);
  if (browsed) path = browser.chosen();
  error_text(ctx, error);
  if (browsed || save_button("Save", path, false, enter, question, error)) {
    if (start_save_capture(s, ctx.snap, views, path)) {
      ImGui::CloseCurrentPopup();
    } else {
      error = s.status_message;
    }
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

// File > Export view...: what is on screen (the viewed layer / head / query block / Delta) as
// figures: the mask (PNG at a chosen size or full-detail tiles, and SVG), the iteration figure, the
// locality figure, hit-ratio and latency plots, and the per-head metrics as CSV.
void draw_export_modal(PanelContext& ctx) {
  AppState& s = ctx.state;
  ExportOptions& o = s.dialogs.export_options;
  std::string& error = s.dialogs.export_error;
  static int px = 1024, tile = 4096;
  // The folder picked in the file browser, or typed: a missing one is created only once agreed to.
  static FileBrowser browser;
  static SaveQuestion question;
  if (s.show_export_view) {
    ImGui::OpenPopup("Export view");
    s.show_export_view = false;
    o.dir = default_export_dir();
    error.clear();
    question.forget();
  }
  fit_next_window(ImVec2(ImGui::GetFontSize() * 36, 0));
  if (!ImGui::BeginPopupModal("Export view", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  keep_window_inside_viewport();
  // One figure (the view on screen) or all of them.
  static int which = 0;
  const std::vector<std::string>& choices = export_figure_choices();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  if (ImGui::BeginCombo("figure", which == 0 ? "every figure" : choices[static_cast<size_t>(which - 1)].c_str())) {
    for (int i = 0; i <= static_cast<int>(choices.size()); ++i)
      if (ImGui::Selectable(i == 0 ? "every figure" : choices[static_cast<size_t>(i - 1)].c_str(), which == i)) which = i;
    ImGui::EndCombo();
  }
  const std::string only = which == 0 ? std::string() : choices[static_cast<size_t>(which - 1)];
  static bool pdf = false;
  ImGui::SameLine();
  ImGui::Checkbox("each SVG also as PDF", &pdf);
  ImGui::TextWrapped("Layer %d, head %d, query block %d, Delta %d: %s, into the folder (a missing one is created once you agree):",
                     s.layer, s.head, s.query_block, s.delta,
                     only.empty() ? "mask figure (PNG and SVG), iteration figure, locality, hit-ratio and latency SVG, metrics CSV"
                                  : only == "mask" ? "the mask figure (PNG and SVG)"
                                  : only == "metrics" ? "the per-head metrics CSV" : ("the " + only + " SVG").c_str());
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 6);
  ImGui::InputTextWithHint("##export_dir", "~/export", &o.dir, ImGuiInputTextFlags_AutoSelectAll);
  ImGui::SameLine();
  if (ImGui::Button("Browse...##export")) browser.open(BrowseFor::kSaveFolder, "Export into", expand_home(o.dir), {});
  if (browser.draw(s.recent_folders, ctx.theme)) o.dir = browser.chosen();  // Export then writes there
  ImGui::Checkbox("Mask at full detail, in PNG tiles", &o.tiles);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (o.tiles) {
    ImGui::InputInt("tile side (px)", &tile, 256, 1024);
    tile = std::clamp(tile, 16, 65536);
  } else {
    ImGui::InputInt("figure longest side (px)", &px, 256, 1024);
    px = std::clamp(px, 16, 16384);
  }
  o.px = px;
  o.tile = tile;
  ImGui::TextUnformatted("Colours:");
  ImGui::SameLine();
  if (ImGui::RadioButton("paper (light)", !o.dark_style)) o.dark_style = false;
  ImGui::SameLine();
  if (ImGui::RadioButton("dark", o.dark_style)) o.dark_style = true;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The figures' colours do not follow the UI theme: paper is for print.");
  error_text(ctx, error);
  if (save_button("Export", o.dir, true, false, question, error)) {
    if (start_export_view(s, ctx.snap, o, only, pdf)) {
      ImGui::CloseCurrentPopup();
    } else {
      error = s.status_message;
    }
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

// View > Reset layout and settings...: what it resets, then Reset or Cancel (Esc).
void draw_reset_modal(PanelContext& ctx, LayoutActions& act) {
  AppState& s = ctx.state;
  if (s.show_reset_confirm) {
    ImGui::OpenPopup("Reset layout and settings?");
    s.show_reset_confirm = false;
  }
  fit_next_window(ImVec2(ImGui::GetFontSize() * 30, 0));
  if (!ImGui::BeginPopupModal("Reset layout and settings?", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  keep_window_inside_viewport();
  ImGui::TextWrapped("The HiP parameters, the prompt (back to the default story), the theme, the UI scale, the recent files "
                     "and the panels' places go back to their defaults. The model and an open capture stay.");
  if (ImGui::Button("Reset")) {
    act.reset_settings = true;
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

// Text on the status line, cut with "..." to `width` pixels; the whole of it, wrapped, on hover
// (a long error must not run off the window with its fix at the end).
void clipped_text(const std::string& text, uint32_t color, float width) {
  std::string shown = text;
  if (ImGui::CalcTextSize(shown.c_str()).x > width) {
    std::string more = "... (hover: all of it)";
    if (ImGui::CalcTextSize(more.c_str()).x > width * 0.6f) more = "...";
    const float room = width - ImGui::CalcTextSize(more.c_str()).x;
    // The longest prefix that fits, by bisection (a long message is thousands of characters), cut at
    // a UTF-8 character's start.
    size_t lo = 0, hi = shown.size();
    while (lo < hi) {
      const size_t mid = (lo + hi + 1) / 2;
      if (ImGui::CalcTextSize(shown.c_str(), shown.c_str() + mid).x <= room) lo = mid;
      else hi = mid - 1;
    }
    while (lo > 0 && (static_cast<unsigned char>(shown[lo]) & 0xC0) == 0x80) --lo;
    shown = shown.substr(0, lo) + more;
  }
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(color), "%s", shown.c_str());
  if (shown != text && ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void draw_status(PanelContext& ctx, float frame_ms, bool idle) {
  const Snapshot& sn = ctx.snap;
  const Theme& t = ctx.theme;
  const std::string fps = idle ? fmt("idle, redrawn on input (last active frame %.1f ms)  F1 help", frame_ms)
                               : fmt("%.1f ms/frame  F1 help", frame_ms);
  const float fps_w = ImGui::CalcTextSize(fps.c_str()).x + ImGui::GetFontSize();
  const float fps_x = ImGui::GetWindowWidth() - fps_w;
  // What is left before the frame time on the right: texts are cut to it and never run under it.
  auto room = [&] { return std::max(0.0f, fps_x - ImGui::GetCursorPosX() - ImGui::GetFontSize()); };
  if (sn.busy) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 16);
    const std::string label = fmt("%s %.0f%%", stage_name(sn.running_stage), sn.fraction * 100);
    ImGui::ProgressBar(static_cast<float>(sn.fraction), ImVec2(ImGui::GetFontSize() * 16, 0), label.c_str());
    ImGui::SameLine();
    if (ImGui::Button("Cancel (Esc)")) ctx.worker.cancel();
    ImGui::SameLine();
    clipped_text(sn.what, t.text_dim, room());
  } else {
    std::string errors;
    for (int st = 0; st < kStageCount; ++st)
      if (!sn.error[st].empty()) errors += std::string(stage_name(st)) + ": " + sn.error[st] + "  ";
    if (!errors.empty()) {
      clipped_text(errors, t.bad, room());
    } else if (!ctx.state.invalid.empty()) {
      clipped_text("Parameters not run: " + ctx.state.invalid, t.warn, room());
    } else if (sn.analysis) {
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.good), "Up to date");
      ImGui::SameLine();
      if (ctx.state.capture) {
        ImGui::TextDisabled("capture, %lld tokens", static_cast<long long>(sn.analysis->tokens()));
      } else {
        // The two halves apart: an r_m or decode-steps change re-runs only the second.
        if (sn.analysis->model.synthetic)
          ImGui::TextDisabled("synthetic Q/K, %lld tokens", static_cast<long long>(sn.analysis->tokens()));
        else
          ImGui::TextDisabled("paired run: prefill %.2f s, decode %.2f s, %lld tokens", sn.analysis->prefill_seconds,
                              sn.analysis->decode_seconds, static_cast<long long>(sn.analysis->tokens()));
      }
    } else {
      ImGui::TextDisabled("Idle");
    }
  }
  if (!ctx.state.status_message.empty() && fps_x - ImGui::GetItemRectMax().x + ImGui::GetWindowPos().x > ImGui::GetFontSize() * 6) {
    ImGui::SameLine();
    const std::string& m = ctx.state.status_message;
    // A failed open or save ("cannot ..."): the reader's or writer's error, in red.
    clipped_text("| " + m, m.rfind("cannot", 0) == 0 ? t.bad : t.text_dim, room());
  }
  ImGui::SameLine(std::max(fps_x, ImGui::GetCursorPosX()));
  ImGui::TextDisabled("%s", fps.c_str());
}

}  // namespace

LayoutActions draw_layout(PanelContext& ctx, std::vector<std::unique_ptr<Panel>>& panels, float frame_ms, bool idle) {
  LayoutActions act;
  AppState& s = ctx.state;
  poll_file_task(s);  // a background save / export: progress, then its result, in the status line
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(6, 4));
  ImGui::Begin("HiP Studio", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoBackground);
  ImGui::PopStyleVar();
  draw_menu(ctx, panels, act);
  // A panel asked for (shortcut, click, self-test) opens if it was closed.
  for (auto& p : panels)
    if (s.focus_panel == p->id()) p->open = true;
  if (s.capture) draw_capture_banner(ctx);
  const float status_h = ImGui::GetFrameHeightWithSpacing() + 4;
  const float body_h = ImGui::GetContentRegionAvail().y - status_h;
  const float total_w = ImGui::GetContentRegionAvail().x;
  s.sidebar_width = std::clamp(s.sidebar_width, 220.0f * ctx.theme.scale, std::max(240.0f, total_w * 0.5f));

  ImGui::BeginChild("##sidebar", ImVec2(s.sidebar_width, body_h), true);
  for (auto& p : panels) {
    if (p->slot != PaneSlot::Sidebar) continue;
    if (ImGui::CollapsingHeader(p->title(), ImGuiTreeNodeFlags_DefaultOpen)) {
      ImGui::PushID(p->id());
      p->draw(ctx);
      act.drawn.push_back(p->id());
      ImGui::PopID();
    }
  }
  ImGui::EndChild();
  ImGui::SameLine(0, 0);
  vertical_splitter("##split_sidebar", &s.sidebar_width, 220.0f * ctx.theme.scale, total_w * 0.5f, body_h);
  ImGui::SameLine(0, 0);
  const float right_w = ImGui::GetContentRegionAvail().x;
  float left_px = s.pane_split * right_w;
  ImGui::BeginChild("##pane_left", ImVec2(left_px, body_h), true);
  draw_pane(ctx, panels, PaneSlot::Left, "##tabs_left", act);
  ImGui::EndChild();
  ImGui::SameLine(0, 0);
  if (vertical_splitter("##split_panes", &left_px, right_w * 0.2f, right_w * 0.8f, body_h))
    s.pane_split = left_px / std::max(1.0f, right_w);
  ImGui::SameLine(0, 0);
  ImGui::BeginChild("##pane_right", ImVec2(0, body_h), true);
  draw_pane(ctx, panels, PaneSlot::Right, "##tabs_right", act);
  ImGui::EndChild();
  draw_status(ctx, frame_ms, idle);
  draw_open_capture_modal(ctx);
  draw_save_capture_modal(ctx, panels);
  draw_export_modal(ctx);
  draw_reset_modal(ctx, act);
  ImGui::End();

  draw_export_preview(ctx);
  handle_shortcuts(ctx, act);
  if (s.show_help) draw_help(ctx, panels);
  return act;
}

}  // namespace hipstudio::gui
