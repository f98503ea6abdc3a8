// The cross-field invariants of a capture, checked in one place. The reader (capture_read.cpp)
// checks what it needs to decode safely (types, shapes, indices inside their arrays); these are the
// facts that tie fields together, which views, reports and the GUI rely on without checking again.
// A capture whose CRCs and content hash were recomputed after an edit passes every check of the
// container, so only these catch it. Each names the field:
//   params.l_d <= dims.layers; params.r_m >= 1; params.decode_steps == dims.decode_records
//   dims: layers, heads >= 1; with inputs kv_heads >= 1 dividing heads, head_dim >= 1
//   analysis/layers: row l is layer l, dense exactly where HiP does not replace it: a windowed layer
//     (analysis/layer_math) or one of the first l_d full-attention layers (without windows: l < l_d)
//   analysis/decode: row s is step s at position tokens + s; the refreshed rows count mask_refreshes;
//     accessed-token counts >= 0; token ids >= 0 (prompt ids, generated ids too)
//   analysis nll, latency components: not negative (NaN allowed: "not measured"); top-1 agreement in [0, 1]
//   access: its HiP layers (hip_layers, else first_layer on) are the layers not marked dense,
//     heads == dims.heads, steps == decode_steps
//   inputs: stored Q/K/V finite
//   masks (every method's): dense_from in [0, tokens]; iteration and branch counts >= 0; recalls in [0, 1] or NaN
//   traces: rows of the traced query block inside the prompt; dense_from in [0, tokens]
//   locality: bins >= 1; queries inside the prompt; counts >= 0 and adding up to the pairs
//   offload: every count >= 0, hits + misses == accesses
//   analysis (the manifest's copy of the metrics, shown by `open` and read by other tools): equal, field
//     by field, to what the parameters and arrays give
#include "captures/capture_invariants.h"

#include <cmath>
#include <vector>

#include "captures/analysis_json.h"
#include "captures/npy.h"
#include "engine/formats/errors.h"

namespace hipstudio::captures {
namespace {

using nlohmann::json;

class Check {
 public:
  explicit Check(std::string what) : what_(std::move(what)) {}
  void require(bool ok, const std::string& field, const std::string& why) const {
    if (!ok) throw InputError(what_ + ": inconsistent capture: field '" + field + "' " + why + "; the file was edited or "
                              "damaged: capture the run again");
  }

 private:
  std::string what_;
};

std::string num(int64_t v) { return std::to_string(v); }

// A short rendering of a JSON value for messages.
std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 48 ? s.substr(0, 45) + "..." : s;
}

// The first path below `path` where `stored` lacks or differs from `expected` (extra keys in
// `stored` are allowed: a newer writer may add some); "" when they agree.
std::string first_difference(const json& stored, const json& expected, const std::string& path, std::string& detail) {
  if (expected.is_object()) {
    if (!stored.is_object()) return detail = "is " + shown(stored) + ", not an object", path;
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      const std::string sub = path + "." + it.key();
      if (!stored.contains(it.key())) return detail = "is missing", sub;
      const std::string d = first_difference(stored[it.key()], it.value(), sub, detail);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (expected.is_array()) {
    if (!stored.is_array() || stored.size() != expected.size())
      return detail = "has " + (stored.is_array() ? num(static_cast<int64_t>(stored.size())) + " entries" : shown(stored)) +
                      " but the capture's data give " + num(static_cast<int64_t>(expected.size())),
             path;
    for (size_t i = 0; i < expected.size(); ++i) {
      const std::string d = first_difference(stored[i], expected[i], path + "[" + std::to_string(i) + "]", detail);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (stored == expected) return "";
  detail = "is " + shown(stored) + " but the capture's parameters and arrays give " + shown(expected);
  return path;
}

bool not_negative(double v) { return !(v < 0); }  // NaN passes: "not measured"

void check_counts(const Check& k, const offload::BankCounts& c, const std::string& field) {
  for (const int64_t v : {c.accesses, c.hits, c.misses, c.bytes, c.evictions, c.probes})
    k.require(v >= 0, field, "holds a negative count");
  k.require(c.hits + c.misses == c.accesses, field, "has hits + misses != accesses");
}

void check_context(const Check& k, const offload::ContextStats& s, const std::string& group) {
  for (const auto* list : {&s.per_step, &s.per_head, &s.per_layer, &s.per_step_total})
    for (const offload::BankCounts& c : *list) check_counts(k, c, group);
  check_counts(k, s.total, group + "/total");
}

// `keyed`: format 3's names (masks/L<l>/<method>/iterations), else format 2's (masks/L<l>/hip_iterations).
void check_mask(const Check& k, const hip::MaskResult& m, int64_t T, const std::string& base, bool keyed) {
  const std::string search = keyed ? "" : "hip_";
  for (const int64_t d : m.dense_from)
    k.require(d >= 0 && d <= T, base + "dense_from", "holds " + num(d) + ", outside the prompt's keys [0, " + num(T) + "]");
  for (const int32_t v : m.iterations) k.require(v >= 0, base + search + "iterations", "holds a negative count");
  for (const int64_t v : m.branches) k.require(v >= 0, base + search + "branches", "holds a negative count");
}

}  // namespace

void check_capture_invariants(const Capture& c, const std::string& what) {
  const Check k(what);
  const PairedAnalysis& a = c.analysis;
  const json& dims = c.manifest.at("dims");
  const int64_t L = dims.at("layers").get<int64_t>(), H = dims.at("heads").get<int64_t>();
  const int64_t G = dims.at("kv_heads").get<int64_t>(), D = dims.at("head_dim").get<int64_t>();
  const int64_t T = static_cast<int64_t>(a.prompt_ids.size()), S = static_cast<int64_t>(a.decode.size());
  const int64_t ld = a.options.hip.dense_layers;

  // Parameters and dimensions.
  k.require(L >= 1, "dims.layers", "is " + num(L) + "; a model has at least one layer");
  k.require(H >= 1, "dims.heads", "is " + num(H) + "; a model has at least one head");
  k.require(ld <= L, "params.l_d", "is " + num(ld) + " but the model has " + num(L) + " layers (dims.layers)");
  k.require(a.options.hip.refresh_every >= 1, "params.r_m", "is " + num(a.options.hip.refresh_every) + ", not >= 1");
  k.require(a.options.decode_steps == S, "params.decode_steps",
            "is " + num(a.options.decode_steps) + " but there are " + num(S) + " decode records (dims.decode_records)");
  if (!a.inputs.empty()) {
    k.require(G >= 1 && H % G == 0, "dims.kv_heads", "is " + num(G) + ", which does not divide the " + num(H) + " heads");
    k.require(D >= 1, "dims.head_dim", "is " + num(D) + ", not >= 1");
  }

  // The analysis arrays.
  for (const int32_t id : a.prompt_ids) k.require(id >= 0, "analysis/prompt_ids", "holds a negative token id");
  // Each side's folder: format 3 keys the methods' by name, formats 1 and 2 hold one at analysis/hip/.
  const bool keyed = c.format_version >= 3;
  std::vector<std::pair<const SideResult*, std::string>> sides{{&a.dense, "analysis/dense/"}};
  for (const CapturedMethod& m : c.methods)
    sides.emplace_back(&m.side, keyed ? "methods/" + m.choice.name + "/" : std::string("analysis/hip/"));
  for (const auto& [side, g] : sides) {
    for (const int32_t id : side->generated) k.require(id >= 0, g + "generated", "holds a negative token id");
    for (const double v : side->nll) k.require(not_negative(v), g + "nll", "holds a negative log-likelihood");
    for (const auto* layers : {&side->latency.prefill_layers, &side->latency.decode_layers})
      for (const ComponentMs& m : *layers)
        k.require(not_negative(m.mask) && not_negative(m.sparse) && not_negative(m.dense) && not_negative(m.other),
                  g + "latency_*_layers", "holds a negative time");
  }
  for (const CapturedMethod& m : c.methods)
    k.require(!(m.top1_agreement < 0 || m.top1_agreement > 1), keyed ? "methods/" + m.choice.name + "/scalars" : "analysis/scalars",
              "holds a top-1 agreement outside [0, 1]");
  // The layers HiP replaces (hip_attention.h's rule): full-attention layers past the first l_d of them.
  std::vector<int64_t> hip_layers;
  int64_t full_rank = 0;
  for (int64_t l = 0; l < static_cast<int64_t>(a.layers.size()); ++l) {
    const bool windowed = a.layers[l].math.windowed();
    const bool hip = !windowed && full_rank >= ld;
    full_rank += windowed ? 0 : 1;
    if (hip) hip_layers.push_back(l);
    k.require(a.layers[l].layer == l, "analysis/layers", "row " + num(l) + " names layer " + num(a.layers[l].layer));
    k.require(a.layers[l].dense == !hip, "analysis/layers",
              "marks layer " + num(l) + (a.layers[l].dense ? " dense" : " HiP") + " but params.l_d is " + num(ld) +
                  (windowed ? " and the layer is windowed" : ""));
  }
  int64_t refreshed = 0;
  for (int64_t s = 0; s < S; ++s) {
    const DecodeStepRecord& r = a.decode[s];
    k.require(r.step == s && r.position == T + s, "analysis/decode",
              "row " + num(s) + " is step " + num(r.step) + " at position " + num(r.position) + ", not step " + num(s) +
                  " at " + num(T + s));
    k.require(r.mask_tokens_accessed >= 0 && r.sparse_tokens_accessed >= 0, "analysis/decode", "holds a negative count");
    k.require(r.dense_token >= 0 && r.hip_token >= 0, "analysis/decode", "holds a negative token id");
    refreshed += r.refreshed ? 1 : 0;
  }
  k.require(refreshed == a.mask_refreshes, "mask_refreshes",
            "is " + num(a.mask_refreshes) + " but " + num(refreshed) + " decode records are refreshes");
  k.require(c.methods.empty() || c.methods[0].mask_refreshes == a.mask_refreshes, "methods",
            "gives the first method " + num(c.methods.empty() ? 0 : c.methods[0].mask_refreshes) + " mask refreshes but mask_refreshes is " +
                num(a.mask_refreshes));

  // The access streams belong to the HiP layers and the decode steps.
  const int64_t first_hip = hip_layers.empty() ? L : hip_layers.front();
  k.require(a.access.first_layer == first_hip, "access.first_layer",
            "is " + num(a.access.first_layer) + " but the first layer HiP replaces is " + num(first_hip) + " (params.l_d " + num(ld) + ")");
  k.require(a.access.layers == static_cast<int64_t>(hip_layers.size()), "access.layers",
            "is " + num(a.access.layers) + " but HiP replaces " + num(static_cast<int64_t>(hip_layers.size())) +
                " of the model's " + num(L) + " layers (params.l_d " + num(ld) + ")");
  if (a.access.layers == static_cast<int64_t>(hip_layers.size()))
    for (int64_t i = 0; i < a.access.layers; ++i)
      k.require(a.access.model_layer(i) == hip_layers[static_cast<size_t>(i)], "access.hip_layers",
                "names layer " + num(a.access.model_layer(i)) + " as HiP layer " + num(i) + " but HiP replaces layer " +
                    num(hip_layers[static_cast<size_t>(i)]) + " there");
  k.require(a.access.layers == 0 || a.access.heads == H, "access.heads", "is " + num(a.access.heads) + " but dims.heads is " + num(H));
  k.require(a.access.steps == S, "access.steps", "is " + num(a.access.steps) + " but there are " + num(S) + " decode steps");

  // Stored Q/K/V: the GUI recomputes views from them; one NaN would make every view NaN.
  for (const LayerInputs& in : a.inputs) {
    const LayerInputArrays& host = in.host();
    const std::string base = what + ": array 'inputs/L" + num(in.layer) + "/";
    require_finite(host.q.data(), {in.heads, in.tokens, in.dim}, base + "q'", "a capture", "capture the run again");
    require_finite(host.k.data(), {in.kv_heads, in.tokens, in.dim}, base + "k'", "a capture", "capture the run again");
    require_finite(host.v.data(), {in.kv_heads, in.tokens, in.dim}, base + "v'", "a capture", "capture the run again");
  }

  // Views.
  for (const CapturedMethod& m : c.methods)
    for (size_t i = 0; i < m.masks.size(); ++i) {
      const std::string base = "masks/L" + num(c.view_layers[i]) + "/" + (keyed ? m.choice.name + "/" : "");
      check_mask(k, m.masks[i].hip, T, base, keyed);
      for (const auto* recall : {&m.masks[i].recall, &m.masks[i].random_recall})
        for (const double r : *recall) k.require(!(r < 0 || r > 1), base + "recall", "holds a recall outside [0, 1]");
    }
  const int64_t b_q = a.options.hip.hip.b_q;
  for (size_t i = 0; i < c.traces.size(); ++i) {
    const hip::MaskTrace& t = c.traces[i].trace;
    const std::string field = "traces/" + std::to_string(i) + "/header";
    k.require(t.row_begin == t.query_block * b_q && t.row_end >= t.row_begin && t.row_end <= T &&
                  t.row_end <= t.row_begin + b_q,
              field, "holds rows [" + num(t.row_begin) + ", " + num(t.row_end) + ") that are not query block " +
                         num(t.query_block) + "'s in a " + num(T) + "-token prompt");
    k.require(t.dense_from >= 0 && t.dense_from <= T, field, "holds dense_from " + num(t.dense_from) + ", outside [0, " + num(T) + "]");
  }
  if (!c.locality.empty()) {
    k.require(c.locality_params.bins >= 1, "locality.bins", "is " + num(c.locality_params.bins) + ", not >= 1");
    for (const int64_t q : c.locality_queries) k.require(q >= 0 && q < T, "locality/queries", "holds row " + num(q) + ", outside the prompt");
    for (size_t i = 0; i < c.locality.size(); ++i) {
      const std::string field = "locality/L" + num(c.view_layers[i]) + "/counts";
      for (const hip::ScoreLocality& h : c.locality[i])
        for (const hip::DeltaStats& d : h.deltas) {
          // Counts from a file: their sum may pass int64 (checked, never wrapped).
          int64_t sum = 0;
          bool overflow = false;
          for (const int64_t n : d.counts) {
            k.require(n >= 0, field, "holds a negative count");
            overflow = overflow || __builtin_add_overflow(sum, n, &sum);
          }
          k.require(!overflow, field, "adds up past the largest 64-bit count");
          if (!overflow)
            k.require(sum == d.pairs, field, "adds up to " + num(sum) + " but the stats count " + num(d.pairs) + " pairs");
        }
    }
  }
  if (c.has_offload) {
    check_context(k, c.offload.mask, "offload/mask");
    check_context(k, c.offload.sparse, "offload/sparse");
  }

  // The manifest's copy of the metrics: everything in it comes from the fields and arrays checked above.
  const json expected = analysis_to_json(a, c.info.run, c.has_offload ? &c.offload : nullptr, c.has_offload ? &c.offload_config : nullptr);
  k.require(c.manifest.contains("analysis"), "analysis", "is missing");
  std::string detail;
  const std::string differs = first_difference(c.manifest.at("analysis"), expected, "analysis", detail);
  k.require(differs.empty(), differs, detail);
}

}  // namespace hipstudio::captures
