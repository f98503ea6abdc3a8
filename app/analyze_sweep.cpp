#include "app/analyze_sweep.h"

#include <cstdio>
#include <filesystem>

#include "app/cli_options.h"
#include "app/common/sweep_outputs.h"
#include "captures/atomic_file.h"
#include "engine/formats/errors.h"

namespace hipstudio::app {

namespace {
using hip::HipField;
namespace fs = std::filesystem;

std::string field_names() {
  std::string names;
  for (HipField f : kSweepFields) names += (names.empty() ? "" : ", ") + std::string(hip::hip_field_name(f));
  return names;
}

// The value HipOptions holds for `field`.
int64_t& hip_option(HipOptions& o, HipField field) {
  if (field == HipField::kDenseLayers) return o.dense_layers;
  if (field == HipField::kRefreshEvery) return o.refresh_every;
  return *hip::hip_size_field(o.params, field);
}
}  // namespace

SweepSpec parse_sweep(const std::string& text, const HipOptions& hip, const ModelConfig& config) {
  const std::string usage = "give one parameter and its values, as --sweep k=128,256,512 (a parameter from " +
                            field_names() + ")";
  const size_t eq = text.find('=');
  if (eq == std::string::npos) throw InputError("--sweep " + text + ": no '=': " + usage);
  SweepSpec spec;
  const std::string name = text.substr(0, eq);
  spec.field = sweep_field_by_name(name);
  if (spec.field == HipField::kNone)
    throw InputError("--sweep " + text + ": '" + name + "' is not a parameter a sweep varies: " + usage);
  const hip::HipParamField& f = hip::hip_param_field(spec.field);
  const std::string list = text.substr(eq + 1);
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    const std::string where = "--sweep " + text + ": " + name + " = '" + item + "'";
    if (item.empty()) throw InputError("--sweep " + text + ": an empty value: " + usage);
    const std::string range =
        range_problem<int64_t>(item, static_cast<int64_t>(f.cli_lo), static_cast<int64_t>(f.cli_hi));
    if (!range.empty()) throw InputError(where + ": " + range + " (the range of " + f.cli_flag + ")");
    const int64_t value = std::stoll(item);
    for (int64_t v : spec.values)
      if (v == value) throw InputError(where + " is given twice: give each value once");
    HipOptions point = hip;
    hip_option(point, spec.field) = value;
    try {
      (void)point.model_params();
      if (spec.field == HipField::kDenseLayers) point.check_dense_layers(config);
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
    spec.values.push_back(value);
    at = comma + 1;
  }
  return spec;
}

std::string sweep_folder(const std::string& sweep_out, const std::string& json_out) {
  if (!sweep_out.empty()) return sweep_out;
  const fs::path parent = fs::path(json_out).parent_path();
  return parent.empty() ? "." : parent.string();
}

void add_sweep_paths(CommandPaths& paths, const std::string& sweep_out, const std::string& json_out, HipField field,
                     const std::string& device) {
  const std::string folder = sweep_folder(sweep_out, json_out);
  const bool timed = device.rfind("cuda", 0) == 0;
  if (!sweep_out.empty()) paths.output_folders.push_back({"--sweep-out", folder});
  for (const std::string& name : sweep_file_names(field, timed)) {
    const PathArg file{"--sweep's " + name, (fs::path(folder) / name).string()};
    if (sweep_out.empty()) paths.output_files.push_back(file);
    else paths.files_in_output_folders.push_back(file);
  }
}

void write_sweep_outputs(const SweepResult& result, const Model& model, const AnalysisOptions& base,
                         const std::string& folder, const std::string& json_out) {
  const std::string context = sweep_context(model.source.display_name, device_description(model.run), base, result);
  std::fputs(sweep_table(result).c_str(), stdout);
  // --sweep-out may name a folder to create (check_command_paths made sure its parent takes it).
  std::error_code ec;
  fs::create_directories(folder, ec);
  for (const auto& [name, contents] : sweep_files(result, context)) {
    const std::string path = (fs::path(folder) / name).string();
    captures::write_file_atomic(path, contents);
    std::fprintf(stderr, "wrote %s\n", path.c_str());
  }
  captures::write_file_atomic(json_out, sweep_json(result, context));
  std::fprintf(stderr, "wrote %s\n", json_out.c_str());
}

}  // namespace hipstudio::app
