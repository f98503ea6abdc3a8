#include "app/gui/settings.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

namespace hipstudio::gui {

std::string config_dir() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/hipstudio";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.config/hipstudio";
}

void load_settings(const std::string& path, PersistedSettings& s, std::vector<std::unique_ptr<Panel>>& panels, WindowGeometry& g) {
  std::ifstream in(path);
  if (!in) return;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    auto get = [&](const char* key, auto& value) {
      if (j.contains(key)) value = j.at(key).get<std::decay_t<decltype(value)>>();
    };
    get("window_width", g.width);
    get("window_height", g.height);
    get("window_x", g.x);
    get("window_y", g.y);
    get("dark", s.dark);
    get("classic_mask_colors", s.classic_mask_colors);
    get("ui_scale", s.ui_scale);
    get("sidebar_width", s.sidebar_width);
    get("pane_split", s.pane_split);
    get("recent_models", s.recent_models);
    get("recent_prompts", s.recent_prompts);
    get("recent_folders", s.recent_folders);
    get("model", s.model_path);
    get("device", s.device);
    get("dtype", s.dtype);
    get("prompt", s.prompt);
    if (j.contains("knobs")) {
      const auto& k = j.at("knobs");
      HipKnobs& h = s.knobs;
      for (const hip::HipParamField& f : hip::hip_param_fields()) {
        if (int* v = knob_count(h, f.field)) *v = k.value(f.settings_key, *v);
        if (float* v = knob_real(h, f.field)) *v = k.value(f.settings_key, *v);
      }
    }
    if (j.contains("panels")) {
      for (auto& p : panels) {
        if (!j["panels"].contains(p->id()) || p->slot == PaneSlot::Sidebar) continue;
        const auto& pj = j["panels"][p->id()];
        p->open = pj.value("open", true);
        p->slot = pj.value("pane", 0) == 1 ? PaneSlot::Right : PaneSlot::Left;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hipstudio: ignoring unreadable settings %s: %s\n", path.c_str(), e.what());
  }
}

void save_settings(const std::string& path, const PersistedSettings& s, const std::vector<std::unique_ptr<Panel>>& panels,
                   const WindowGeometry& g) {
  write_settings_text(path, settings_text(s, panels, g));
}

std::string settings_text(const PersistedSettings& s, const std::vector<std::unique_ptr<Panel>>& panels, const WindowGeometry& g) {
  nlohmann::json j;
  j["window_width"] = g.width;
  j["window_height"] = g.height;
  j["window_x"] = g.x;
  j["window_y"] = g.y;
  j["dark"] = s.dark;
  j["classic_mask_colors"] = s.classic_mask_colors;
  j["ui_scale"] = s.ui_scale;
  j["sidebar_width"] = s.sidebar_width;
  j["pane_split"] = s.pane_split;
  j["recent_models"] = s.recent_models;
  j["recent_prompts"] = s.recent_prompts;
  j["recent_folders"] = s.recent_folders;
  j["model"] = s.model_path;
  j["device"] = s.device;
  j["dtype"] = s.dtype;
  j["prompt"] = s.prompt;
  HipKnobs h = s.knobs;
  nlohmann::json& knobs = j["knobs"] = nlohmann::json::object();
  for (const hip::HipParamField& f : hip::hip_param_fields()) {
    if (const int* v = knob_count(h, f.field)) knobs[f.settings_key] = *v;
    if (const float* v = knob_real(h, f.field)) knobs[f.settings_key] = *v;
  }
  for (const auto& p : panels)
    if (p->slot != PaneSlot::Sidebar)
      j["panels"][p->id()] = {{"open", p->open}, {"pane", p->slot == PaneSlot::Right ? 1 : 0}};
  // Invalid UTF-8 in a prompt (a binary file opened as one) is replaced, not thrown on.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_settings_text(const std::string& path, const std::string& text) {
  const std::string dir = path.substr(0, path.find_last_of('/'));
  mkdir(dir.substr(0, dir.find_last_of('/')).c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) return;
    out << text;
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace hipstudio::gui
