#pragma once
// Every keyboard shortcut, registered once (ImHex's ShortcutManager): the key handling, the View
// menu's labels and the help window all read this one table. Global shortcuts act in
// handle_shortcuts (layout.h); a panel's local ones (the mask view's zoom keys, the prompt's
// Ctrl+Enter) are bound here too and the panel asks shortcut_pressed().
#include <vector>

namespace hipstudio::gui {

enum class Action {
  Help, Cancel, Generate, Theme, Quit,
  FocusPanel,                      // `panel` names the panel to bring to front
  NextStep, PrevStep, FirstStep, LastStep, Play,
  PrevHead, NextHead, PrevLayer, NextLayer, PrevBlock, NextBlock,
  RunPrompt,                       // the prompt panel, while editing
  MaskFit, MaskZoomIn, MaskZoomOut,  // the mask view, while hovered
};

struct Shortcut {
  const char* keys;   // as shown: "Ctrl+1"
  const char* what;   // the help window's text
  int key;            // GLFW key code
  bool ctrl;          // with Ctrl held
  Action action;
  const char* panel = nullptr;  // FocusPanel: the panel id
  bool global = true;           // false: the panel that owns it handles it (shortcut_pressed)
};

const std::vector<Shortcut>& shortcuts();
// The View menu's label for a panel ("Ctrl+1"), or nullptr.
const char* panel_shortcut(const char* panel_id);
// Whether a panel-local shortcut's key was pressed this frame (with Ctrl exactly as registered).
bool shortcut_pressed(Action action);

}  // namespace hipstudio::gui
