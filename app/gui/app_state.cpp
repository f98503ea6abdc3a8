#include "app/gui/app_state.h"

#include <algorithm>
#include <cmath>

#include "app/gui/capture_view.h"
#include "kernels/hip_param_rules.h"
#include "kernels/hip_params.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::gui {

namespace {
void push_recent(std::vector<std::string>& list, const std::string& item) {
  if (item.empty()) return;
  list.erase(std::remove(list.begin(), list.end(), item), list.end());
  list.insert(list.begin(), item);
  if (list.size() > 8) list.resize(8);
}
}  // namespace

void PersistedSettings::add_recent_model(const std::string& path) { push_recent(recent_models, path); }
void PersistedSettings::add_recent_prompt(const std::string& path) { push_recent(recent_prompts, path); }

void Selection::record_stepped_block(const SteppedBlock& b) {
  if (stepped_blocks.size() >= kMaxSteppedBlocks) return;
  if (std::find(stepped_blocks.begin(), stepped_blocks.end(), b) == stepped_blocks.end()) stepped_blocks.push_back(b);
}

void MaskViewState::follow_tokens(int64_t T) {
  if (T == tokens) return;
  const double t = static_cast<double>(T);
  const bool inside = span > 0 && x0 >= 0 && y0 >= 0 && x0 + span <= t && y0 + span <= t;
  if (!(zoomed && inside)) fit();
  tokens = T;
}

hip::HipParams to_hip_params(const HipKnobs& k) {
  hip::HipParams p;
  p.k = k.k;
  p.b_q = k.b_q;
  p.b_k = k.b_k;
  p.b_sq = k.b_sq;
  p.b_sk = k.b_sk;
  p.sink = k.sink;
  p.window = k.window;
  p.rho = k.rho;
  return p;
}

// HipKnobs' int members in HipField order (nullptr: the field is a float knob).
constexpr int HipKnobs::*kKnobCounts[hip::kHipFieldCount] = {
    &HipKnobs::k,    &HipKnobs::b_q,    &HipKnobs::b_k, &HipKnobs::b_sq, &HipKnobs::b_sk,   &HipKnobs::sink,
    &HipKnobs::window, nullptr,         &HipKnobs::l_d, &HipKnobs::r_m,  nullptr,           &HipKnobs::decode_steps};

int* knob_count(HipKnobs& k, hip::HipField f) {
  const int i = static_cast<int>(f);
  if (i < 0 || i >= hip::kHipFieldCount || !kKnobCounts[i]) return nullptr;
  return &(k.*kKnobCounts[i]);
}

float* knob_real(HipKnobs& k, hip::HipField f) {
  if (f == hip::HipField::kRho) return &k.rho;
  if (f == hip::HipField::kCacheFactor) return &k.cache_factor;
  return nullptr;
}

KnobBreak knob_break(const HipKnobs& k, int64_t full_attention_layers) {
  using F = hip::HipField;
  const hip::HipParams p = to_hip_params(k);
  const hip::HipRuleBreak b = hip::first_broken_hip_rule(p);
  if (b.rule != hip::HipRule::kNone) return {hip::hip_params_problem(p), b.field, b.other_field};
  if (k.l_d < 0) return {"l_d (" + std::to_string(k.l_d) + ") must be >= 0", F::kDenseLayers};
  if (full_attention_layers > 0 && k.l_d > full_attention_layers)
    return {"l_d (" + std::to_string(k.l_d) + ") must be <= the model's full-attention layers (" +
                std::to_string(full_attention_layers) + "), the layers HiP can replace",
            F::kDenseLayers};
  if (k.r_m < 1) return {"r_m (" + std::to_string(k.r_m) + ") must be >= 1", F::kRefreshEvery};
  if (k.decode_steps < 0) return {"decode steps must be >= 0", F::kDecodeSteps};
  if (!(k.cache_factor >= 0) || !std::isfinite(k.cache_factor)) return {"cache factor c must be >= 0", F::kCacheFactor};
  return {};
}

std::string validate_knobs(const HipKnobs& k, int64_t full_attention_layers) { return knob_break(k, full_attention_layers).message; }

Request make_request(const AppState& s) {
  Request r;
  r.model.path = s.model_path;
  r.model.device = s.device;
  r.model.dtype = s.dtype;
  r.model.synthetic_tokens = s.synthetic_tokens;
  r.model.reload = s.model_reload;
  r.prompt = s.prompt;
  const HipKnobs& k = s.applied;
  r.hip.hip = to_hip_params(k);
  r.hip.dense_layers = k.l_d;
  r.hip.refresh_every = k.r_m;
  r.decode_steps = k.decode_steps;
  r.cache_factor = k.cache_factor;
  r.layer = s.layer;
  r.head = s.head;
  r.query_block = s.query_block;
  r.delta = s.delta;
  r.bins = s.bins;
  r.generate_id = s.generate_id;
  r.generate_tokens = s.generate_tokens;
  r.latency_tokens = s.latency_tokens;
  r.sweep_id = s.sweep_id;
  r.sweep_field = s.sweep_field;
  r.sweep_values = s.sweep_values;
  r.sweep_views_layer = s.sweep_views_layer;
  r.methods_id = s.methods_id;
  r.methods = s.methods;
  r.compare_methods = compare_choices(s);
  if (s.capture) {  // read-only: the capture's model, prompt and parameters, never the sliders'
    const AnalysisView& a = *s.capture->analysis;
    const AnalysisOptions& o = a.analysis->options;
    r.model = ModelRequest{};
    r.model.capture = s.capture->path + "#" + std::to_string(s.capture->id);
    r.model.capture_view = s.capture->analysis;
    r.prompt = a.prompt;
    r.hip = o.hip;
    r.decode_steps = o.decode_steps;
    r.seed = o.random_seed;
    r.cache_factor = s.capture->knobs.cache_factor;
    r.generate_id = 0;  // generation needs the model
    r.sweep_id = 0;     // and so does a sweep
    r.methods_id = 0;   // and a method comparison
  }
  return r;
}

uint64_t ask_sweep(AppState& s, hip::HipField field, std::vector<int64_t> values) {
  s.sweep_field = field;
  s.sweep_values = std::move(values);
  s.sweep_views_layer = s.sweep_every_layer ? -1 : s.layer;
  return ++s.sweep_id;
}

std::vector<hip::methods::MethodChoice> compare_choices(const AppState& s) {
  namespace hm = hip::methods;
  auto wanted = [&](const std::string& name) {
    return s.compare_left == name || s.compare_right == name ||
           std::find(s.compare_multiples.begin(), s.compare_multiples.end(), name) != s.compare_multiples.end();
  };
  const hip::HipParams p = to_hip_params(s.applied);
  std::vector<hm::MethodChoice> out;
  for (const hm::SelectionMethod* m : hm::selection_methods()) {
    if (!wanted(m->name)) continue;
    hm::MethodValues given;
    for (const hm::MethodChoice& c : s.methods)
      if (c.name == m->name) given = c.values;
    hm::MethodChoice c{m->name, {}};
    try {
      c.values = hm::resolve_values(*m, given, p);
    } catch (const std::invalid_argument&) {
      c.values = given;  // refused at these knobs: the stage reports it for this method
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace hipstudio::gui
