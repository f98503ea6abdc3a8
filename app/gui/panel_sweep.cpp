// The Sweep panel: one HiP parameter (k, b_k, b_q, l_d or r_m) over a list of values with every other
// setting as the sidebar holds it, run on the worker (the sweep stage: progress, Cancel) by the same
// computation as `hipstudio analyze --sweep` (engine/analysis/sweep.h); a metric plotted against the
// value, the table, and the CSV + SVG files the command line writes (app/common/sweep_outputs.h).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <imgui.h>

#include "app/common/sweep_outputs.h"
#include "app/gui/file_browser.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"
#include "app/gui/worker.h"
#include "captures/atomic_file.h"

namespace hipstudio::gui {

namespace {
using hip::HipField;

// The values text as the panel checks it: a list of integers, each making valid settings with the
// other knobs (knob_break, the sidebar's own rules), no value twice.
struct ParsedValues {
  std::vector<int64_t> values;
  std::string problem;  // "" when every value passes
};

ParsedValues parse_values(const std::string& text, HipField field, const HipKnobs& applied, int64_t n_layers) {
  ParsedValues p;
  std::stringstream in(text);
  const std::string name = hip::hip_field_name(field);
  for (std::string item; std::getline(in, item, ',');) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) {
      p.problem = "an empty value: give values as 128, 256, 512";
      return p;
    }
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > (1LL << 30)) {
      p.problem = name + " = '" + item + "' is not a count: give whole numbers";
      return p;
    }
    for (int64_t seen : p.values)
      if (seen == v) {
        p.problem = name + " = " + item + " is given twice";
        return p;
      }
    HipKnobs k = applied;
    *knob_count(k, field) = static_cast<int>(v);
    const KnobBreak b = knob_break(k, n_layers);
    if (!b.message.empty()) {
      p.problem = name + " = " + item + ": " + b.message;
      return p;
    }
    p.values.push_back(v);
  }
  if (p.values.empty()) p.problem = "no values: give values as 128, 256, 512";
  return p;
}

// A starting list around the current value: half, the value, twice and four times (k, b_k, b_q in
// multiples the other knobs allow where the doubling keeps them), or a few small counts (l_d, r_m).
std::string default_values(HipField field, const HipKnobs& k) {
  HipKnobs copy = k;
  const int v = std::max(1, *knob_count(copy, field));
  if (field == HipField::kDenseLayers) return "0, 1, 2, 3";
  if (field == HipField::kRefreshEvery) return "1, 2, 4, 8";
  const int half = std::max(1, v / 2);
  return std::to_string(half) + ", " + std::to_string(v) + ", " + std::to_string(2 * v) + ", " + std::to_string(4 * v);
}

uint32_t im_color(uint32_t rgb) { return IM_COL32((rgb >> 16) & 0xff, (rgb >> 8) & 0xff, rgb & 0xff, 255); }

class SweepPanel final : public Panel {
 public:
  const char* id() const override { return "sweep"; }
  const char* title() const override { return "Sweep"; }
  PaneSlot default_slot() const override { return PaneSlot::Left; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    if (s.capture) {
      empty_state("A sweep runs the model: close the capture (File > Close capture) to sweep.", t);
      return;
    }
    const int64_t n_layers = ctx.snap.model ? ctx.snap.model->n_layers : 0;
    controls(ctx, n_layers);
    const auto& sv = ctx.snap.sweep;
    const bool running = ctx.snap.busy && ctx.snap.running_stage == kStageSweep;
    if (running) {
      ImGui::ProgressBar(static_cast<float>(ctx.snap.fraction), ImVec2(-ImGui::GetFontSize() * 8, 0), ctx.snap.what.c_str());
      ImGui::SameLine();
      if (ImGui::Button("Cancel##sweep")) ctx.worker.cancel();
    }
    const std::string& err = ctx.snap.error[kStageSweep];
    if (!err.empty() && s.sweep_id != 0)
      warn_text(err == "cancelled" ? "The sweep was cancelled: press Run to run it again." : "The sweep failed: " + err, t);
    if (!sv) {
      if (!running) empty_state("Pick a parameter and its values, then press Run.", t);
      return;
    }
    const bool stale = ctx.snap.stale[kStageSweep] && !running;
    StaleScope grey(stale);
    if (stale && err.empty()) warn_text("The sweep is of earlier settings: press Run for the current ones.", t);
    ImGui::TextWrapped("%s", sv->context.c_str());
    plot(*sv, t);
    table(*sv);
    exports(ctx, *sv);
  }

 private:
  void controls(PanelContext& ctx, int64_t n_layers) {
    AppState& s = ctx.state;
    // A sweep asked for elsewhere (the self-test, restored settings) shows as the field and values it ran.
    if (s.sweep_id != asked_id_) {
      asked_id_ = s.sweep_id;
      if (!s.sweep_values.empty()) {
        for (size_t i = 0; i < kSweepFields.size(); ++i)
          if (kSweepFields[i] == s.sweep_field) field_index_ = static_cast<int>(i);
        values_.clear();
        for (int64_t v : s.sweep_values) values_ += (values_.empty() ? "" : ", ") + std::to_string(v);
      }
    }
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
    const std::string current = hip::hip_field_name(kSweepFields[static_cast<size_t>(field_index_)]);
    if (ImGui::BeginCombo("parameter##sweep", current.c_str())) {
      for (size_t i = 0; i < kSweepFields.size(); ++i)
        if (ImGui::Selectable(hip::hip_field_name(kSweepFields[i]), static_cast<int>(i) == field_index_)) {
          field_index_ = static_cast<int>(i);
          values_.clear();
        }
      ImGui::EndCombo();
    }
    const HipField field = kSweepFields[static_cast<size_t>(field_index_)];
    if (values_.empty()) values_ = default_values(field, s.applied);
    ImGui::SameLine();
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s", values_.c_str());
    // Room on the line for Run and the "every layer" box.
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 16));
    if (ImGui::InputText("values##sweep", buf, sizeof buf)) values_ = buf;
    const ParsedValues parsed = parse_values(values_, field, s.applied, n_layers);
    ImGui::SameLine();
    const bool can_run = parsed.problem.empty() && s.invalid.empty() && ctx.snap.model;
    ImGui::BeginDisabled(!can_run);
    if (ImGui::Button("Run##sweep")) asked_id_ = ask_sweep(s, field, parsed.values);
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::Checkbox("every layer##sweep", &s.sweep_every_layer);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Off: recall, mass and error of the viewed layer (%d) alone, the only layer whose views a value "
                        "computes (seconds a value).\nOn: their means over every HiP layer (a layer's views each).\n"
                        "KL and latency are the whole model's either way.",
                        s.layer);
    // The line under the controls is always there (empty when all is well), so an error never moves them.
    if (!parsed.problem.empty()) warn_text(parsed.problem, ctx.theme);
    else if (!s.invalid.empty()) warn_text("The sidebar's settings are refused: " + s.invalid, ctx.theme);
    else ImGui::TextDisabled("%zu values; the other settings as the sidebar holds them; the dense side runs once.",
                             parsed.values.size());
  }

  void plot(const SweepView& sv, const Theme& t) {
    const auto& metrics = app::sweep_metrics();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
    if (ImGui::BeginCombo("metric##sweep", metrics[static_cast<size_t>(metric_index_)].label)) {
      for (size_t i = 0; i < metrics.size(); ++i)
        if (ImGui::Selectable(metrics[i].label, static_cast<int>(i) == metric_index_)) metric_index_ = static_cast<int>(i);
      ImGui::EndCombo();
    }
    const app::SweepMetric metric = metrics[static_cast<size_t>(metric_index_)].metric;
    const SweepResult& r = sv.result;
    if (metric == app::SweepMetric::kLatency && !r.timed) {
      ImGui::TextWrapped("No latency: on the CPU HiP runs the float64 correctness reference, not a speed.");
      return;
    }
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (const SweepRow& row : r.rows) {
      const double y = app::sweep_metric_value(row, metric);
      x0 = std::min(x0, static_cast<double>(row.value)), x1 = std::max(x1, static_cast<double>(row.value));
      if (std::isfinite(y)) y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
    if (!(x1 >= x0)) return;
    const bool unit = metric == app::SweepMetric::kRecall || metric == app::SweepMetric::kMass;
    if (unit) y0 = 0, y1 = 1;
    if (!(y1 > y0)) y0 = std::isfinite(y0) ? y0 - 0.5 : 0, y1 = std::isfinite(y1) ? y1 + 0.5 : 1;
    // A linear axis as the SVG's (ticks on round values), with a margin around the values so the
    // first and the last point are drawn whole.
    const double margin = x1 == x0 ? 1.0 : 0.05 * (x1 - x0);
    x0 -= margin, x1 += margin;
    const float w = ImGui::GetContentRegionAvail().x;
    const float h = std::max(ImGui::GetFontSize() * 12, std::min(w * 0.5f, ImGui::GetContentRegionAvail().y * 0.5f));
    const PlotArea p = begin_plot("##sweep_plot", ImVec2(w, h), x0, x1, y0, y1, hip::hip_field_name(r.field),
                                  metrics[static_cast<size_t>(metric_index_)].label, t);
    const std::vector<std::string> methods = app::sweep_methods(r);
    for (size_t m = 0; m < methods.size(); ++m) {
      std::vector<double> xs, ys;
      for (const SweepRow& row : r.rows)
        if (row.method == methods[m]) xs.push_back(static_cast<double>(row.value)), ys.push_back(app::sweep_metric_value(row, metric));
      const uint32_t c = im_color(app::sweep_method_color(m));
      plot_line(p, xs, ys, c);
      plot_points(p, xs, ys, c, 5.0f);
    }
    end_plot();
    for (size_t m = 0; m < methods.size(); ++m) legend_item(im_color(app::sweep_method_color(m)), methods[m].c_str());
    ImGui::NewLine();
  }

  static void table(const SweepView& sv) {
    const auto& metrics = app::sweep_metrics();
    const int cols = 2 + static_cast<int>(metrics.size());
    if (!ImGui::BeginTable("##sweep_rows", cols, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit))
      return;
    // Widths from the start: a fitted table measures its cells a frame late.
    const float w = ImGui::GetFontSize() * 5.5f;
    ImGui::TableSetupColumn("method", ImGuiTableColumnFlags_WidthFixed, w);
    ImGui::TableSetupColumn(hip::hip_field_name(sv.result.field), ImGuiTableColumnFlags_WidthFixed, w);
    for (const auto& m : metrics) ImGui::TableSetupColumn(m.key, ImGuiTableColumnFlags_WidthFixed, w);
    ImGui::TableHeadersRow();
    for (const SweepRow& row : sv.result.rows) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row.method.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(row.value));
      for (const auto& m : metrics) {
        ImGui::TableNextColumn();
        const double v = app::sweep_metric_value(row, m.metric);
        if (std::isfinite(v)) ImGui::Text(m.metric == app::SweepMetric::kKl ? "%.5f" : "%.4f", v);
        else ImGui::TextDisabled("n/a");
      }
    }
    ImGui::EndTable();
  }

  // The command line's files of this sweep into a folder that exists, typed or picked in the file
  // browser (which asks before it creates one); a file already there is replaced as every output is
  // (captures/atomic_file.h).
  void exports(PanelContext& ctx, const SweepView& sv) {
    AppState& s = ctx.state;
    if (folder_.empty()) folder_ = s.dialogs.export_options.dir.empty() ? "." : s.dialogs.export_options.dir;
    char buf[1024];
    std::snprintf(buf, sizeof buf, "%s", folder_.c_str());
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 10, ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 17));
    if (ImGui::InputText("folder##sweep", buf, sizeof buf)) folder_ = buf;
    ImGui::SameLine();
    if (ImGui::Button("Browse...##sweep")) browser_.open(BrowseFor::kSaveFolder, "Export the sweep into", folder_, {});
    if (browser_.draw(s.recent_folders, ctx.theme)) folder_ = browser_.chosen();
    ImGui::SameLine();
    if (ImGui::Button("Export CSV + SVG##sweep")) export_error_ = export_sweep(s, sv, folder_, ctx.now);
    if (!export_error_.empty()) warn_text(export_error_, ctx.theme);
  }

 private:
  // Writes the sweep's files into `folder`; "" when written (the status line names them), else why not.
  static std::string export_sweep(AppState& s, const SweepView& sv, const std::string& folder, double now) {
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
      return "The folder " + folder + " does not exist: create it first, or pick another one.";
    try {
      std::string written;
      for (const auto& [name, contents] : app::sweep_files(sv.result, sv.context)) {
        const std::string path = (std::filesystem::path(folder) / name).string();
        captures::write_file_atomic(path, contents);
        s.last_exported.push_back(path);
        written += (written.empty() ? "" : ", ") + name;
      }
      s.status_message = "Wrote " + written + " in " + folder;
      s.status_until = now + 6;
      return "";
    } catch (const std::exception& e) {
      return std::string("Not exported: ") + e.what();
    }
  }

  int field_index_ = 0;
  int metric_index_ = 0;
  uint64_t asked_id_ = 0;  // the AppState::sweep_id the controls show
  std::string values_;
  std::string folder_;
  std::string export_error_;
  FileBrowser browser_;
};

}  // namespace

std::unique_ptr<Panel> make_sweep_panel() { return std::make_unique<SweepPanel>(); }

}  // namespace hipstudio::gui
