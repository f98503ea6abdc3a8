#pragma once
// The HiP parameters as named fields, declared once (the idea of llama.cpp's src/llama-arch.cpp name
// tables): each field's name, command-line flag and help, range, the keys it has in the analysis
// JSON, the capture manifest and the GUI settings, its slider's help and range, and its defaults.
// The CLI options (app/hip_options.cpp), the sliders (app/gui/panel_params.cpp), the settings file
// (app/gui/settings.cpp), the analysis JSON (captures/analysis_json.cpp) and the capture manifest
// (captures/capture_write.cpp, capture_read.cpp) iterate this table; a rule break
// (kernels/hip_param_rules.h) names its HipField, so a message and a slider name the same field.
//
// The enum and hip_field_name are HIPSTUDIO_HOST_DEVICE (the CUDA launch check names fields too); the
// table itself is host-only (hip_param_fields.cpp).
#include <array>
#include <cstdint>

#include "kernels/cuda/host_device.h"
#include "kernels/hip_params.h"

namespace hipstudio::hip {

// In table order, which is also the order of the CLI help and of every file's reading.
enum class HipField : int32_t {
  kNone = -1,
  kK = 0,        // top-k budget in tokens
  kBq,           // query block size
  kBk,           // key block size
  kBsq,          // query stride when scoring a branch
  kBsk,          // key stride when scoring a branch
  kSink,         // sink tokens
  kWindow,       // dense window tokens
  kRho,          // representative position (HipParams::rho; the CLI's --repr)
  kDenseLayers,  // l_d (HipModelParams::dense_layers)
  kRefreshEvery, // r_m (HipModelParams::refresh_every)
  kCacheFactor,  // c, the offloading bank's factor
  kDecodeSteps,  // greedy decode steps after the prompt (AnalysisOptions::decode_steps)
};
constexpr int kHipFieldCount = 12;

// The name rules and messages use ("b_k"), "" for kNone.
HIPSTUDIO_HOST_DEVICE const char* hip_field_name(HipField f) {
  switch (f) {
    case HipField::kK: return "k";
    case HipField::kBq: return "b_q";
    case HipField::kBk: return "b_k";
    case HipField::kBsq: return "b_sq";
    case HipField::kBsk: return "b_sk";
    case HipField::kSink: return "sink";
    case HipField::kWindow: return "window";
    case HipField::kRho: return "rho";
    case HipField::kDenseLayers: return "l_d";
    case HipField::kRefreshEvery: return "r_m";
    case HipField::kCacheFactor: return "c";
    case HipField::kDecodeSteps: return "decode steps";
    case HipField::kNone: break;
  }
  return "";
}

// One field. A key that is nullptr: the field is not in that file (the analysis JSON's and the
// manifest's params hold no cache factor: it is in their offload sections).
struct HipParamField {
  HipField field;
  bool integer;              // an int64 count; else a real number
  const char* cli_flag;      // "--topk"
  const char* cli_help;      // the option's help, as `--help` prints it
  double cli_lo, cli_hi;     // the option's range (see hip_param_fields.cpp for why these)
  const char* json_key;      // key in the analysis JSON's "params"
  const char* manifest_key;  // key in the capture manifest's "params"
  const char* settings_key;  // key in the GUI settings' "knobs"
  const char* slider_label;  // the sidebar's short label
  const char* slider_help;   // the slider's tooltip
  double slider_lo, slider_hi;  // slider range where the model or prompt does not set it
  double default_value;      // HipParams / HipModelParams / the CLI's default
  double gui_default;        // the sidebar's default (the paper's settings scaled to stories15M)
};

// Every field, in HipField order.
const std::array<HipParamField, kHipFieldCount>& hip_param_fields();
const HipParamField& hip_param_field(HipField f);

// The kernel's integer parameter of `f` in `p` (k, b_q, b_k, b_sq, b_sk, sink, window); nullptr for
// the other fields.
int64_t* hip_size_field(HipParams& p, HipField f);
int64_t hip_size_value(const HipParams& p, HipField f);

// The kernel's sizes, in table order.
constexpr std::array<HipField, 7> kHipSizeFields = {HipField::kK,    HipField::kBq,   HipField::kBk,    HipField::kBsq,
                                                    HipField::kBsk,  HipField::kSink, HipField::kWindow};

}  // namespace hipstudio::hip
