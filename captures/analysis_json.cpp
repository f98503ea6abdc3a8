#include "captures/analysis_json.h"

#include <cmath>

#include "captures/analysis_json_parts.h"
#include "captures/params_fields.h"

namespace hipstudio::captures {

namespace {
using nlohmann::json;

json number(double v) { return number_json(v); }

json numbers(const std::vector<double>& values) {
  json a = json::array();
  for (double v : values) a.push_back(number(v));
  return a;
}

double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

json counts(const offload::BankCounts& c) {
  return {{"accesses", c.accesses}, {"hits", c.hits}, {"misses", c.misses}, {"bytes", c.bytes},
          {"hit_ratio", number(offload::hit_ratio(c))}};
}

json context(const offload::ContextStats& s) {
  json j = counts(s.total);
  j["bank_tokens"] = s.bank_tokens;
  j["bytes_per_token"] = s.bytes_per_token;
  j["page_table_bytes"] = s.page_table_bytes;
  json steps = json::array();
  for (const offload::BankCounts& c : s.per_step_total) steps.push_back(counts(c));
  j["per_step"] = steps;
  json layers = json::array();
  for (const offload::BankCounts& c : s.per_layer) layers.push_back(counts(c));
  j["per_layer"] = layers;
  return j;
}
}  // namespace

json number_json(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json components_json(const ComponentMs& c) {
  return {{"mask_estimation", number(c.mask)}, {"sparse_attention", number(c.sparse)},
          {"dense_attention", number(c.dense)}, {"other", number(c.other)}, {"total", number(c.total())}};
}

json latency_json(const LatencyBreakdown& l) {
  json layers = json::array();
  for (size_t i = 0; i < l.prefill_layers.size(); ++i)
    layers.push_back({{"layer", i}, {"prefill", components_json(l.prefill_layers[i])}, {"decode_step", components_json(l.decode_layers[i])}});
  return {{"prefill", components_json(l.prefill)}, {"decode_step", components_json(l.decode_step)}, {"layers", layers}};
}

json side_json(const SideResult& s) {
  return {{"ppl", number(s.ppl)}, {"mean_nll", number(s.mean_nll)}, {"nll", numbers(s.nll)}, {"generated", s.generated}};
}

json layers_json(const std::vector<LayerQuality>& quality, bool with_random) {
  json layers = json::array();
  for (const LayerQuality& layer : quality) {
    json heads = json::array();
    for (size_t h = 0; h < layer.heads.size(); ++h) {
      const HeadQuality& q = layer.heads[h];
      json head = {{"head", h}, {"recall", number(q.recall)}, {"mass", number(q.mass)}, {"out_rel_err", number(q.out_rel_err)}};
      if (with_random) {
        head["random_recall"] = number(q.random_recall);
        head["random_mass"] = number(q.random_mass);
        head["random_out_rel_err"] = number(q.random_out_rel_err);
      }
      heads.push_back(std::move(head));
    }
    // The layer's attention as the forward pass ran it, so a reader can tell a windowed layer (whose
    // numbers are null: HiP does not replace it) from one under l_d.
    const json attention = {{"window", layer.math.window}, {"scale", layer.math.score.scale}, {"softcap", layer.math.score.softcap}};
    layers.push_back({{"layer", layer.layer}, {"dense", layer.dense}, {"attention", attention}, {"heads", heads}});
  }
  return layers;
}

json run_json(const char* schema, const PairedAnalysis& a, const RunInfo& info) {
  json j;
  j["schema"] = schema;
  j["tool"] = {{"name", "hipstudio"}, {"version", info.tool_version}};
  j["model"] = {{"name", info.model}, {"architecture", info.architecture}};
  j["device"] = info.device;
  j["prompt"] = {{"text", info.prompt}, {"tokens", a.prompt_ids}};
  j["params"] = {{"force_dense_tokens", a.options.force_dense_tokens}, {"random_seed", a.options.random_seed}};
  for (const hip::HipParamField& f : hip::hip_param_fields())
    if (f.json_key) j["params"][f.json_key] = params_value(a.options, f.field);
  return j;
}

json analysis_to_json(const PairedAnalysis& a, const RunInfo& info, const offload::OffloadResult* offload,
                      const offload::OffloadConfig* offload_config) {
  json j = run_json("hipstudio.analysis/1", a, info);
  j["dense"] = side_json(a.dense);
  j["hip"] = side_json(a.hip);
  j["kl"] = number(a.kl);
  j["top1_agreement"] = number(a.top1_agreement);

  j["layers"] = layers_json(a.layers);

  json steps = json::array();
  for (const DecodeStepRecord& s : a.decode)
    steps.push_back({{"step", s.step},
                     {"position", s.position},
                     {"refreshed", s.refreshed},
                     {"dense_token", s.dense_token},
                     {"hip_token", s.hip_token},
                     {"mask_tokens_accessed", s.mask_tokens_accessed},
                     {"sparse_tokens_accessed", s.sparse_tokens_accessed}});
  j["decode"] = {{"steps", static_cast<int64_t>(a.decode.size())}, {"mask_refreshes", a.mask_refreshes}, {"per_step", steps}};

  if (offload) {
    j["offload"] = {{"mask", context(offload->mask)}, {"sa", context(offload->sparse)}, {"first_layer", offload->first_layer},
                    {"context_tokens", offload->context_tokens}};
    if (offload_config) {
      j["offload"]["page_table"] = offload::page_table_kind_name(offload_config->table);
      j["offload"]["policy"] = offload::eviction_policy_name(offload_config->policy);
      j["offload"]["cache_factor"] = offload_config->cache_factor;
    }
  }

  j["latency_ms"] = {{"dense", latency_json(a.dense.latency)},
                     {"hip", latency_json(a.hip.latency)},
                     {"speedup",
                      {{"prefill", number(ratio(a.dense.latency.prefill.total(), a.hip.latency.prefill.total()))},
                       {"decode_step", number(ratio(a.dense.latency.decode_step.total(), a.hip.latency.decode_step.total()))}}}};
  return j;
}

}  // namespace hipstudio::captures
