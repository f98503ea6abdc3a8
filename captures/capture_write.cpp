// encode_capture / write_capture: the manifest and the named arrays (layout in capture_layout.h),
// emitted entry by entry through one ZipWriter into a string or, streamed, into the output file.
#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include "captures/analysis_json_parts.h"
#include "captures/atomic_file.h"
#include "captures/capture.h"
#include "captures/capture_layout.h"
#include "captures/content_hash.h"
#include "captures/npy.h"
#include "captures/params_fields.h"
#include "captures/sha256.h"
#include "captures/zip_store.h"
#include "engine/formats/dtype.h"
#include "engine/formats/errors.h"

namespace hipstudio::captures {
namespace {
using nlohmann::json;

// The capture's arrays by name: small ones encoded when added, the prompt's Q/K/V (most of a long
// capture's bytes) encoded one at a time while they are written, so the writer never holds more
// than one of them beside the capture.
class ArraySink {
 public:
  template <class T>
  void add(const std::string& name, const std::vector<int64_t>& shape, const std::vector<T>& values) {
    store(name, NpyTypeOf<T>::value, shape, values.data(), values.size());
  }
  // Float values stored as 16-bit elements: bfloat16 bits as uint16 (numpy has no bfloat16) or
  // IEEE float16. Exact for values the run computed in that dtype.
  // Float inputs in `dtype` ("f32", or 16-bit: bfloat16 bits as uint16, numpy having no bfloat16,
  // or IEEE float16; exact for values the run computed in that dtype), encoded when written:
  // `values` must outlive write().
  void add_floats(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values, const std::string& dtype) {
    const bool half = dtype != "f32", bf16 = dtype == "bf16";
    const NpyDType type = !half ? NpyDType::F32 : bf16 ? NpyDType::U16 : NpyDType::F16;
    check_count(name, shape, values.size());
    manifest_[name + ".npy"] = {{"dtype", npy_type_name(type)}, {"shape", shape}};
    arrays_[name].encode = [type, shape, &values, half, bf16] {
      if (!half) return image(type, shape, values.data());
      std::vector<uint16_t> bits(values.size());
      for (size_t i = 0; i < values.size(); ++i) bits[i] = bf16 ? float_to_bf16(values[i]) : float_to_f16(values[i]);
      return image(type, shape, bits.data());
    };
  }
  size_t size() const { return arrays_.size(); }
  const json& manifest() const { return manifest_; }

  // Every array into `zip` in name order, each one's part of the content hash (content_hash.h:
  // name order) taken as it goes; returns the hash.
  std::string write(ZipWriter& zip) {
    Sha256 content;
    for (auto& [name, array] : arrays_) {
      std::string bytes = array.encode ? array.encode() : std::move(array.image);
      hash_capture_array(content, name, bytes);
      zip.add(name + ".npy", bytes);
    }
    return content.finish_hex();
  }

 private:
  static void check_count(const std::string& name, const std::vector<int64_t>& shape, size_t count) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (n != static_cast<int64_t>(count))
      throw std::logic_error("capture array " + name + ": " + std::to_string(count) + " values for its shape");
  }
  static std::string image(NpyDType type, const std::vector<int64_t>& shape, const void* data) {
    const std::vector<unsigned char> npy = encode_npy(type, shape, data);
    return std::string(reinterpret_cast<const char*>(npy.data()), npy.size());
  }
  void store(const std::string& name, NpyDType type, const std::vector<int64_t>& shape, const void* data, size_t count) {
    check_count(name, shape, count);
    arrays_[name].image = image(type, shape, data);
    manifest_[name + ".npy"] = {{"dtype", npy_type_name(type)}, {"shape", shape}};
  }
  struct Array {
    std::string image;                    // the .npy bytes, or
    std::function<std::string()> encode;  // what makes them at write()
  };
  std::map<std::string, Array> arrays_;  // by name (no .npy)
  json manifest_ = json::object();
};

std::vector<double> components(const std::vector<ComponentMs>& rows) {
  std::vector<double> v;
  for (const ComponentMs& c : rows) v.insert(v.end(), {c.mask, c.sparse, c.dense, c.other});
  return v;
}

// A side's per-token and latency arrays under the folder `g` ("analysis/dense/", "methods/hip/").
void add_side(ArraySink& s, const std::string& g, const SideResult& r) {
  s.add(g + "nll", {static_cast<int64_t>(r.nll.size())}, r.nll);
  s.add(g + "generated", {static_cast<int64_t>(r.generated.size())}, r.generated);
  const int64_t L = static_cast<int64_t>(r.latency.prefill_layers.size());
  s.add(g + "latency_prefill_layers", {L, 4}, components(r.latency.prefill_layers));
  s.add(g + "latency_decode_layers", {static_cast<int64_t>(r.latency.decode_layers.size()), 4}, components(r.latency.decode_layers));
  s.add(g + "latency_totals", {2, 4}, components({r.latency.prefill, r.latency.decode_step}));
}

void add_ragged(ArraySink& s, const std::string& base, const std::vector<std::vector<int32_t>>& lists) {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> keys;
  for (const auto& l : lists) {
    keys.insert(keys.end(), l.begin(), l.end());
    offsets.push_back(static_cast<int64_t>(keys.size()));
  }
  s.add(base + "_offsets", {static_cast<int64_t>(offsets.size())}, offsets);
  s.add(base + "_keys", {static_cast<int64_t>(keys.size())}, keys);
}

std::vector<int64_t> counts_rows(const std::vector<offload::BankCounts>& rows) {
  std::vector<int64_t> v;
  for (const auto& c : rows) v.insert(v.end(), {c.accesses, c.hits, c.misses, c.bytes, c.evictions, c.probes});
  return v;
}

void add_context(ArraySink& s, const char* name, const offload::ContextStats& c, const offload::OffloadResult& r) {
  const std::string g = std::string("offload/") + name + "/";
  s.add(g + "per_step", {r.layers, r.heads, r.steps, 6}, counts_rows(c.per_step));
  s.add(g + "per_head", {r.layers, r.heads, 6}, counts_rows(c.per_head));
  s.add(g + "per_layer", {r.layers, 6}, counts_rows(c.per_layer));
  s.add(g + "per_step_total", {r.steps, 6}, counts_rows(c.per_step_total));
  s.add(g + "total", {6}, counts_rows({c.total}));
  s.add(g + "map", {c.map.steps, c.map.tokens}, std::vector<int32_t>(c.map.cells.begin(), c.map.cells.end()));
}

// Every HiP and run parameter; "selection" names the side the views show (the first method) and
// "selection_seed" is as format 2 wrote it (the manifest's "methods" holds every value).
json params_json(const AnalysisOptions& o) {
  const HipModelParams& p = o.hip;
  json j = {{"causal", p.hip.causal},
            {"selection", p.method.name},
            {"selection_seed", layout::selection_seed(p.method)},
            {"force_dense_tokens", o.force_dense_tokens},
            {"context_limit", o.context_limit},
            {"random_seed", o.random_seed}};
  for (const hip::HipParamField& f : hip::hip_param_fields())
    if (f.manifest_key) j[f.manifest_key] = params_value(o, f.field);
  return j;
}

json offload_config_json(const offload::OffloadConfig& c) {
  return {{"cache_factor", c.cache_factor},
          {"mask_bank_tokens", c.mask_bank_tokens},
          {"sparse_bank_tokens", c.sparse_bank_tokens},
          {"page_table", offload::page_table_kind_name(c.table)},
          {"policy", offload::eviction_policy_name(c.policy)},
          {"k", c.k},
          {"b_sk", c.b_sk},
          {"context_tokens", c.context_tokens},
          {"mask_bytes_per_token", c.mask_bytes_per_token},
          {"sparse_bytes_per_token", c.sparse_bytes_per_token},
          {"build_access_map", c.build_access_map}};
}

json context_scalars(const offload::ContextStats& c) {
  return {{"bank_tokens", c.bank_tokens}, {"bytes_per_token", c.bytes_per_token}, {"page_table_bytes", c.page_table_bytes}};
}


json values_json(const hip::methods::MethodValues& values) {
  json j = json::object();
  for (const auto& [name, value] : values) j[name] = value;
  return j;
}

// A method's side: its per-token arrays, scalars and per-head quality under methods/<name>/, its
// masks (with the baselines on its side) under masks/L<l>/<name>/.
void add_method(ArraySink& s, const CapturedMethod& m, const std::vector<int64_t>& view_layers, int64_t H) {
  const std::string& n = m.choice.name;
  add_side(s, "methods/" + n + "/", m.side);
  s.add(layout::method_array(n, "scalars"), {static_cast<int64_t>(layout::kMethodScalarColumns.size())},
        std::vector<double>{m.side.mean_nll, m.side.ppl, m.kl, m.top1_agreement});
  std::vector<double> quality;
  for (const std::vector<HeadQuality>& heads : m.quality) {
    if (static_cast<int64_t>(heads.size()) != H) throw std::logic_error("capture: method " + n + " with another head count");
    for (const HeadQuality& h : heads)
      quality.insert(quality.end(), {h.recall, h.random_recall, h.mass, h.random_mass, h.out_rel_err, h.random_out_rel_err});
  }
  s.add(layout::method_array(n, "quality"),
        {static_cast<int64_t>(m.quality.size()), H, static_cast<int64_t>(layout::kQualityColumns.size())}, quality);
  if (!m.masks.empty() && m.masks.size() != view_layers.size())
    throw std::logic_error("capture: method " + n + "'s masks must cover every view layer or none");
  for (size_t i = 0; i < m.masks.size(); ++i) {
    const LayerMaskViews& v = m.masks[i];
    auto name = [&](const char* a) { return layout::method_mask_array(view_layers[i], n, a); };
    const std::vector<int64_t> hq{v.hip.heads, v.hip.query_blocks}, hqk{v.hip.heads, v.hip.query_blocks, v.hip.kb};
    s.add(name("blocks"), hqk, v.hip.blocks);
    s.add(name("counts"), hq, v.hip.counts);
    s.add(name("dense_from"), {v.hip.query_blocks}, v.hip.dense_from);
    if (m.choice.is_hip()) {
      s.add(name("iterations"), hq, v.hip.iterations);
      s.add(name("branches"), hq, v.hip.branches);
    }
    s.add(name("oracle_blocks"), hqk, v.oracle.blocks);
    s.add(name("oracle_counts"), hq, v.oracle.counts);
    s.add(name("random_blocks"), hqk, v.random.blocks);
    s.add(name("random_counts"), hq, v.random.counts);
    s.add(name("recall"), hq, v.recall);
    s.add(name("random_recall"), hq, v.random_recall);
  }
}

// Builds the capture's entries and hands them, in file order, to `zip` (then finishes it).
void emit_capture(const Capture& c, ZipWriter& zip) {
  const PairedAnalysis& a = c.analysis;
  const int64_t L = static_cast<int64_t>(a.layers.size());
  const int64_t H = L ? static_cast<int64_t>(a.layers[0].heads.size()) : 0;
  ArraySink s;

  s.add("analysis/prompt_ids", {static_cast<int64_t>(a.prompt_ids.size())}, a.prompt_ids);
  s.add("analysis/dense/scalars", {2}, std::vector<double>{a.dense.mean_nll, a.dense.ppl});
  add_side(s, "analysis/dense/", a.dense);
  std::vector<int64_t> layer_rows;
  for (const LayerQuality& q : a.layers) {
    if (static_cast<int64_t>(q.heads.size()) != H) throw std::logic_error("capture: layers with different head counts");
    layer_rows.insert(layer_rows.end(), {q.layer, q.dense ? 1 : 0});
  }
  s.add("analysis/layers", {L, 2}, layer_rows);
  // Every method's side keyed by its name: the first is the one `analysis` and `masks` show (what a
  // caller edited there is what is written), the others as captured.
  if (!c.masks.empty() && c.masks.size() != c.view_layers.size())
    throw std::logic_error("capture: masks must cover every view layer or none");
  const CapturedMethod first = captured_method(a.options.hip.method, a, c.masks);
  std::vector<const CapturedMethod*> all{&first};
  for (size_t i = 1; i < c.methods.size(); ++i) all.push_back(&c.methods[i]);
  json methods = json::array();
  for (const CapturedMethod* m : all) {
    if (static_cast<int64_t>(m->quality.size()) != L) throw std::logic_error("capture: method " + m->choice.name + " with another layer count");
    for (const json& held : methods)
      if (held["name"] == m->choice.name) throw InputError("method '" + m->choice.name + "' is captured twice");
    add_method(s, *m, c.view_layers, H);
    methods.push_back({{"name", m->choice.name}, {"values", values_json(m->choice.values)}, {"mask_refreshes", m->mask_refreshes},
                       {"summary", method_summary_json(*m, a.layers)}});
  }
  // Each layer's attention maths (window, scale, soft-cap; 0: none / 1 / sqrt(head_dim)): what the
  // views' numbers were scored with, so a reader recomputing them uses the same.
  std::vector<double> maths;
  for (const LayerQuality& q : a.layers)
    maths.insert(maths.end(), {static_cast<double>(q.math.window), q.math.score.scale, q.math.score.softcap});
  s.add("analysis/layer_math", {L, 3}, maths);
  std::vector<int64_t> decode;
  for (const DecodeStepRecord& d : a.decode)
    decode.insert(decode.end(), {d.step, d.position, d.dense_token, d.hip_token, d.refreshed ? 1 : 0, d.mask_tokens_accessed,
                                 d.sparse_tokens_accessed});
  s.add("analysis/decode", {static_cast<int64_t>(a.decode.size()), 7}, decode);
  add_ragged(s, "access/mask", a.access.mask_keys);
  add_ragged(s, "access/sparse", a.access.sparse_keys);

  // Inputs are stored in the run's dtype (bf16 / f16 halve the file; the values came from it).
  const std::string inputs_dtype = c.info.dtype == "bf16" || c.info.dtype == "f16" ? c.info.dtype : "f32";
  // Per-layer arrays are named by the model's layer; they cover exactly the view layers.
  for (const LayerInputs& in : a.inputs) {
    if (c.view_index(in.layer) < 0) throw std::logic_error("capture: inputs of a layer outside view_layers");
    const int64_t l = in.layer;
    const std::vector<int64_t> q_shape{in.heads, in.tokens, in.dim}, kv_shape{in.kv_heads, in.tokens, in.dim};
    const LayerInputArrays& host = in.host();  // a device run's inputs come to the host here
    s.add_floats(layout::layer_array("inputs", l, "q"), q_shape, host.q, inputs_dtype);
    s.add_floats(layout::layer_array("inputs", l, "k"), kv_shape, host.k, inputs_dtype);
    s.add_floats(layout::layer_array("inputs", l, "v"), kv_shape, host.v, inputs_dtype);
  }
  if (!a.inputs.empty() && a.inputs.size() != c.view_layers.size())
    throw std::logic_error("capture: inputs must cover every view layer or none");
  json traces = json::array();
  for (size_t i = 0; i < c.traces.size(); ++i) {
    const hip::MaskTrace& t = c.traces[i].trace;
    traces.push_back({{"layer", c.traces[i].layer}, {"head", t.head}, {"query_block", t.query_block}});
    s.add(layout::trace_array(i, "header"), {9},
          std::vector<int64_t>{c.traces[i].layer, t.head, t.query_block, t.row_begin, t.row_end, t.p0, t.lo, t.hi, t.dense_from});
    std::vector<int32_t> initial = t.initial_begin;
    initial.insert(initial.end(), t.initial_end.begin(), t.initial_end.end());
    s.add(layout::trace_array(i, "initial"), {2, static_cast<int64_t>(t.initial_begin.size())}, initial);
    s.add(layout::trace_array(i, "blocks"), {static_cast<int64_t>(t.blocks.size())}, t.blocks);
    std::vector<int32_t> branches;
    std::vector<double> scores;
    for (size_t it = 0; it < t.iterations.size(); ++it)
      for (const hip::TraceBranch& b : t.iterations[it].branches) {
        branches.insert(branches.end(), {static_cast<int32_t>(it), b.begin, b.end, b.repr, b.kept ? 1 : 0});
        scores.push_back(b.score);
      }
    s.add(layout::trace_array(i, "branches"), {static_cast<int64_t>(scores.size()), 5}, branches);
    s.add(layout::trace_array(i, "scores"), {static_cast<int64_t>(scores.size())}, scores);
    const std::vector<double>& oracle = c.traces[i].oracle_scores;
    if (!oracle.empty()) s.add(layout::trace_array(i, "oracle_scores"), {static_cast<int64_t>(oracle.size())}, oracle);
  }

  if (!c.locality.empty()) {
    s.add("locality/queries", {static_cast<int64_t>(c.locality_queries.size())}, c.locality_queries);
    const int64_t nd = static_cast<int64_t>(c.locality_params.deltas.size()), bins = c.locality_params.bins;
    if (c.locality.size() != c.view_layers.size()) throw std::logic_error("capture: locality must cover every view layer");
    for (size_t i = 0; i < c.locality.size(); ++i) {
      const int64_t l = c.view_layers[i];
      std::vector<double> stats;
      std::vector<int64_t> counts;
      for (const hip::ScoreLocality& h : c.locality[i])
        for (const hip::DeltaStats& d : h.deltas) {
          stats.insert(stats.end(), {static_cast<double>(d.delta), static_cast<double>(d.pairs), d.mean, d.stddev, d.hist_lo,
                                     d.hist_hi, d.kl_to_normal});
          counts.insert(counts.end(), d.counts.begin(), d.counts.end());
        }
      const int64_t heads = static_cast<int64_t>(c.locality[i].size());
      s.add(layout::layer_array("locality", l, "stats"), {heads, nd, 7}, stats);
      s.add(layout::layer_array("locality", l, "counts"), {heads, nd, bins}, counts);
    }
  }

  json offload = nullptr;
  if (c.has_offload) {
    const offload::OffloadResult& r = c.offload;
    add_context(s, "mask", r.mask, r);
    add_context(s, "sparse", r.sparse, r);
    offload = {{"config", offload_config_json(c.offload_config)},
               {"steps", r.steps}, {"layers", r.layers}, {"heads", r.heads}, {"first_layer", r.first_layer},
               {"context_tokens", r.context_tokens},
               {"mask", context_scalars(r.mask)}, {"sparse", context_scalars(r.sparse)}};
  }

  // The arrays first, streamed in name order: the content hash (every array's name and bytes in
  // name order, so a reader can check the arrays it got are the ones the manifest describes, and
  // two captures compare by one string) is known once they are written. The manifest that holds
  // it comes last in the file and first in the directory.
  if (s.size() + c.images.size() + 1 > 0xffff) throw InputError("a capture holds at most 65535 entries");
  const std::string content = s.write(zip);
  for (const Capture::Image& im : c.images) zip.add("images/" + im.name, im.bytes);

  json m;
  m["format"] = kCaptureFormat;
  m["format_version"] = kCaptureFormatVersion;
  m["min_reader_version"] = kCaptureFormatVersion;
  m["tool"] = {{"name", "hipstudio"}, {"version", c.info.run.tool_version}};
  m["created"] = c.info.created;
  m["model"] = {{"name", c.info.run.model}, {"architecture", c.info.run.architecture}, {"sha256", c.info.model_sha256}};
  m["device"] = c.info.run.device;
  m["dtype"] = c.info.dtype;
  m["prompt"] = {{"text", c.info.run.prompt}, {"tokens", a.prompt_ids}};
  if (!c.info.prompt_pieces.empty()) {
    if (c.info.prompt_pieces.size() != a.prompt_ids.size()) throw std::logic_error("capture: a text piece per prompt token");
    m["prompt"][layout::kPromptPieces] = c.info.prompt_pieces;
  }
  if (!c.info.decode_dense_pieces.empty() || !c.info.decode_hip_pieces.empty()) {
    if (c.info.decode_dense_pieces.size() != a.decode.size() || c.info.decode_hip_pieces.size() != a.decode.size())
      throw std::logic_error("capture: a text piece per decode record and side");
    m[layout::kDecodePieces] = {{"dense", c.info.decode_dense_pieces}, {"hip", c.info.decode_hip_pieces}};
  }
  m["params"] = params_json(a.options);
  m["views"] = c.info.views;
  const LayerInputs* in0 = a.inputs.empty() ? nullptr : &a.inputs[0];
  m["dims"] = {{"layers", L},
               {"heads", H},
               {"kv_heads", in0 ? in0->kv_heads : 0},
               {"head_dim", in0 ? in0->dim : 0},
               {"tokens", static_cast<int64_t>(a.prompt_ids.size())},
               {"decode_records", static_cast<int64_t>(a.decode.size())},
               {"view_layers", c.view_layers},
               {"inputs", !a.inputs.empty()},
               {"inputs_dtype", inputs_dtype}};
  m["mask_refreshes"] = a.mask_refreshes;
  m["access"] = {{"steps", a.access.steps}, {"layers", a.access.layers}, {"heads", a.access.heads}, {"first_layer", a.access.first_layer}};
  if (!a.access.hip_layers.empty()) m["access"]["hip_layers"] = a.access.hip_layers;
  m["masks"] = !c.masks.empty();
  m[layout::kMethods] = methods;
  m[layout::kMethodColumns] = {{"scalars", layout::kMethodScalarColumns}, {"quality", layout::kQualityColumns}};
  m["traces"] = traces;
  m["locality"] = c.locality.empty() ? json(nullptr)
                                     : json{{"deltas", c.locality_params.deltas}, {"bins", c.locality_params.bins}};
  m["offload"] = offload;
  json images = json::array();
  for (const Capture::Image& im : c.images) images.push_back("images/" + im.name);
  m["images"] = images;
  m["arrays"] = s.manifest();
  m["content_sha256"] = content;
  m["analysis"] = analysis_to_json(a, c.info.run, c.has_offload ? &c.offload : nullptr, c.has_offload ? &c.offload_config : nullptr);

  zip.add_listed_first("manifest.json", m.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  zip.finish();
}

}  // namespace

std::string encode_capture(const Capture& c) {
  std::string out;
  ZipWriter zip([&out](std::string_view bytes) { out.append(bytes); });
  emit_capture(c, zip);
  return out;
}

uint64_t write_capture(const std::string& path, const Capture& c) {
  // Each entry goes to the file as it is emitted: the archive is never one string beside its
  // arrays. A failure before commit() leaves the target as it was (captures/atomic_file.h).
  AtomicOutput out(path);
  ZipWriter zip([&out](std::string_view bytes) { out.write(bytes); });
  emit_capture(c, zip);
  out.commit();
  return zip.bytes_written();
}

}  // namespace hipstudio::captures
