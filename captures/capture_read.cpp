// read_capture / decode_capture: validate the container, the manifest and every array against it,
// then rebuild the Capture (layout in capture_layout.h).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "captures/capture.h"
#include "captures/capture_invariants.h"
#include "captures/capture_layout.h"
#include "captures/content_hash.h"
#include "captures/mapped_file.h"
#include "captures/npy.h"
#include "captures/params_fields.h"
#include "captures/sha256.h"
#include "captures/zip_store.h"
#include "engine/formats/architectures.h"
#include "engine/formats/dtype.h"
#include "engine/formats/errors.h"

namespace hipstudio::captures {
namespace {
using nlohmann::json;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// Manifest fields, each read with a message naming the field when it is missing or mistyped.
class Fields {
 public:
  explicit Fields(std::string what) : what_(std::move(what)) {}
  [[noreturn]] void fail(const std::string& why) const { throw InputError(what_ + ": damaged capture manifest: " + why); }
  const json& at(const json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) fail(std::string("field '") + key + "' is missing");
    return j.at(key);
  }
  int64_t integer(const json& j, const char* key) const {
    const json& v = at(j, key);
    if (!v.is_number_integer()) fail(std::string("field '") + key + "' is not an integer");
    return v.get<int64_t>();
  }
  uint64_t unsigned_integer(const json& j, const char* key) const {
    const json& v = at(j, key);
    if (!v.is_number_unsigned()) fail(std::string("field '") + key + "' is not a non-negative integer");
    return v.get<uint64_t>();
  }
  double number(const json& j, const char* key) const {
    const json& v = at(j, key);
    if (!v.is_number()) fail(std::string("field '") + key + "' is not a number");
    return v.get<double>();
  }
  bool boolean(const json& j, const char* key) const {
    const json& v = at(j, key);
    if (!v.is_boolean()) fail(std::string("field '") + key + "' is not true/false");
    return v.get<bool>();
  }
  std::string text(const json& j, const char* key) const {
    const json& v = at(j, key);
    if (!v.is_string()) fail(std::string("field '") + key + "' is not a string");
    return v.get<std::string>();
  }
  int64_t count(const json& j, const char* key) const {
    const int64_t v = integer(j, key);
    if (v < 0 || v > (int64_t{1} << 31)) fail(std::string("field '") + key + "' is out of range");
    return v;
  }

 private:
  std::string what_;
};

using Entries = std::map<std::string, ZipEntryView>;

// Whether a read skips `name`'s bytes: the prompt's Q/K/V when the caller asked for no inputs.
bool skipped_array(const std::string& name, const CaptureReadOptions& options) {
  return !options.inputs && name.rfind("inputs/", 0) == 0;
}

// The named arrays: every entry the manifest lists is present, passes its CRC-32, parses as .npy
// and has the listed dtype and shape (the skipped ones are only checked to be present); get() also
// checks the shape the analysis' dimensions require (-1: any).
class Arrays {
 public:
  Arrays(const Entries& entries, const json& listed, const Fields& f, std::string what, const CaptureReadOptions& options)
      : what_(std::move(what)) {
    if (!listed.is_object()) f.fail("'arrays' is not an object");
    Sha256 content;
    for (const auto& [file, spec] : listed.items()) {
      if (file.size() < 5 || file.compare(file.size() - 4, 4, ".npy") != 0) f.fail("array '" + file + "' is not a .npy name");
      const std::string name = file.substr(0, file.size() - 4);
      auto it = entries.find(file);
      if (it == entries.end()) fail(name, "is listed in the manifest but missing from the file");
      if (skipped_array(name, options)) {
        hashed_all_ = false;  // the content hash covers bytes this read does not look at
        continue;
      }
      check_entry_crc(it->second, what_);
      const auto* data = reinterpret_cast<const unsigned char*>(it->second.data.data());
      NpyView a = parse_npy_view(data, it->second.data.size(), what_ + ": " + file);
      const std::string dtype = f.text(spec, "dtype");
      const json& shape = f.at(spec, "shape");
      std::vector<int64_t> listed_shape;
      if (!shape.is_array()) f.fail("array '" + file + "' has no shape list");
      for (const json& d : shape) {
        if (!d.is_number_integer()) f.fail("array '" + file + "' has a non-integer dimension");
        listed_shape.push_back(d.get<int64_t>());
      }
      if (dtype != npy_type_name(a.dtype)) fail(name, std::string("holds ") + npy_type_name(a.dtype) + " but the manifest says " + dtype);
      if (listed_shape != a.shape) fail(name, "has shape " + shape_text(a.shape) + " but the manifest says " + shape_text(listed_shape));
      hash_capture_array(content, name, it->second.data);
      arrays_.emplace(name, std::move(a));
    }
    for (const auto& [file, bytes] : entries)
      if (file.size() > 4 && file.compare(file.size() - 4, 4, ".npy") == 0 && !listed.contains(file))
        fail(file.substr(0, file.size() - 4), "is in the file but not listed in the manifest");
    content_sha256_ = content.finish_hex();
  }

  // Over every listed array, when the read looked at all of them (hashed_all()).
  const std::string& content_sha256() const { return content_sha256_; }
  bool hashed_all() const { return hashed_all_; }
  bool has(const std::string& name) const { return arrays_.count(name) != 0; }

  template <class T>
  std::vector<T> get(const std::string& name, const std::vector<int64_t>& expected) const {
    const NpyView& a = checked(name, expected, NpyTypeOf<T>::value);
    std::vector<T> out(static_cast<size_t>(a.numel()));
    if (!out.empty()) std::memcpy(out.data(), a.elements, out.size() * sizeof(T));  // the one copy, from the file's bytes
    return out;
  }
  // A float array stored as float32, or as 16-bit `half` ("bf16": bfloat16 bits in uint16, "f16").
  std::vector<float> get_floats(const std::string& name, const std::vector<int64_t>& expected, const std::string& half) const {
    if (half == "f32") return get<float>(name, expected);
    const bool bf16 = half == "bf16";
    const NpyView& a = checked(name, expected, bf16 ? NpyDType::U16 : NpyDType::F16);
    std::vector<float> out(static_cast<size_t>(a.numel()));
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, a.elements + 2 * i, 2);
      out[i] = bf16 ? bf16_to_float(bits) : f16_to_float(bits);
    }
    return out;
  }
  std::vector<int64_t> shape(const std::string& name) const {
    auto it = arrays_.find(name);
    if (it == arrays_.end()) fail(name, "is missing (the manifest's views need it)");
    return it->second.shape;
  }
  [[noreturn]] void fail(const std::string& name, const std::string& why) const {
    throw InputError(what_ + ": damaged capture: array '" + name + "' " + why);
  }

 private:
  // The array `name`, checked to hold `type` in the shape `expected` (-1: any size there).
  const NpyView& checked(const std::string& name, const std::vector<int64_t>& expected, NpyDType type) const {
    auto it = arrays_.find(name);
    if (it == arrays_.end()) fail(name, "is missing (the manifest's views need it)");
    const NpyView& a = it->second;
    if (a.dtype != type) fail(name, std::string("holds ") + npy_type_name(a.dtype) + ", expected " + npy_type_name(type));
    bool ok = a.shape.size() == expected.size();
    for (size_t i = 0; ok && i < expected.size(); ++i) ok = expected[i] < 0 || expected[i] == a.shape[i];
    if (!ok) fail(name, "has shape " + shape_text(a.shape) + " but the capture's dimensions need " + shape_text(expected));
    return a;
  }
  std::string what_;
  std::map<std::string, NpyView> arrays_;  // views into the archive's bytes, valid while it is decoded
  std::string content_sha256_;
  bool hashed_all_ = true;
};

std::vector<ComponentMs> to_components(const std::vector<double>& v) {
  std::vector<ComponentMs> out;
  for (size_t i = 0; i + 3 < v.size(); i += 4) out.push_back({v[i], v[i + 1], v[i + 2], v[i + 3]});
  return out;
}

// A side's per-token and latency arrays under the folder `g` ("analysis/dense/", "methods/hip/").
SideResult read_side(const Arrays& ar, const std::string& g, int64_t L, int64_t T) {
  SideResult r;
  r.nll = ar.get<double>(g + "nll", {std::max<int64_t>(T - 1, 0)});
  r.generated = ar.get<int32_t>(g + "generated", {-1});
  r.latency.prefill_layers = to_components(ar.get<double>(g + "latency_prefill_layers", {L, 4}));
  r.latency.decode_layers = to_components(ar.get<double>(g + "latency_decode_layers", {L, 4}));
  const auto totals = to_components(ar.get<double>(g + "latency_totals", {2, 4}));
  r.latency.prefill = totals[0];
  r.latency.decode_step = totals[1];
  return r;
}

std::vector<std::vector<int32_t>> read_ragged(const Arrays& ar, const std::string& base, int64_t lists) {
  const auto offsets = ar.get<int64_t>(base + "_offsets", {lists + 1});
  const auto keys = ar.get<int32_t>(base + "_keys", {-1});
  std::vector<std::vector<int32_t>> out;
  if (offsets[0] != 0 || offsets.back() != static_cast<int64_t>(keys.size())) ar.fail(base + "_offsets", "does not cover the key list");
  for (int64_t i = 0; i < lists; ++i) {
    // Every offset inside the key list, not just the last: a list reaching past it would be read
    // before the next pair is checked.
    if (offsets[i + 1] < offsets[i] || offsets[i + 1] > static_cast<int64_t>(keys.size()))
      ar.fail(base + "_offsets", "is not ascending within the key list");
    out.emplace_back(keys.begin() + offsets[i], keys.begin() + offsets[i + 1]);
  }
  return out;
}

std::vector<offload::BankCounts> to_counts(const std::vector<int64_t>& v) {
  std::vector<offload::BankCounts> out;
  for (size_t i = 0; i + 5 < v.size(); i += 6) out.push_back({v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5]});
  return out;
}

void read_context(const Arrays& ar, const Fields& f, const json& j, const char* name, offload::OffloadContext kind,
                  offload::OffloadResult& r, offload::ContextStats& c) {
  const std::string g = std::string("offload/") + name + "/";
  c.context = kind;
  c.bank_tokens = f.count(j, "bank_tokens");
  c.bytes_per_token = f.count(j, "bytes_per_token");
  c.page_table_bytes = f.count(j, "page_table_bytes");
  c.per_step = to_counts(ar.get<int64_t>(g + "per_step", {r.layers, r.heads, r.steps, 6}));
  c.per_head = to_counts(ar.get<int64_t>(g + "per_head", {r.layers, r.heads, 6}));
  c.per_layer = to_counts(ar.get<int64_t>(g + "per_layer", {r.layers, 6}));
  c.per_step_total = to_counts(ar.get<int64_t>(g + "per_step_total", {r.steps, 6}));
  c.total = to_counts(ar.get<int64_t>(g + "total", {6}))[0];
  const auto shape = ar.shape(g + "map");
  const auto cells = ar.get<int32_t>(g + "map", {-1, -1});
  c.map.steps = shape[0];
  c.map.tokens = shape[1];
  for (int32_t v : cells) {
    if (v < 0 || v > offload::kAccessMiss) ar.fail(g + "map", "holds a value that is not none/hit/miss");
    c.map.cells.push_back(static_cast<uint8_t>(v));
  }
}

// One selection's blocks and counts, named by `name` ("blocks" -> its array); HiP's search also
// has iterations and branches.
hip::MaskResult read_mask(const Arrays& ar, const std::function<std::string(const char*)>& name, bool hip_search, int64_t H,
                          int64_t QB, int64_t Kb, int64_t key_blocks, const std::vector<int64_t>& dense_from) {
  hip::MaskResult m;
  m.heads = H;
  m.query_blocks = QB;
  m.kb = Kb;
  m.blocks = ar.get<int32_t>(name("blocks"), {H, QB, Kb});
  m.counts = ar.get<int32_t>(name("counts"), {H, QB});
  m.dense_from = dense_from;
  for (int32_t b : m.blocks)
    if (b < -1 || b >= key_blocks) ar.fail(name("blocks"), "holds key block " + std::to_string(b) + " outside the prompt");
  for (int32_t n : m.counts)
    if (n < 0 || n > Kb) ar.fail(name("counts"), "holds a count outside [0, k / b_k]");
  if (hip_search) {
    m.iterations = ar.get<int32_t>(name("iterations"), {H, QB});
    m.branches = ar.get<int64_t>(name("branches"), {H, QB});
  } else {
    m.iterations.assign(static_cast<size_t>(H * QB), 0);
    m.branches.assign(static_cast<size_t>(H * QB), 0);
  }
  return m;
}

// Format 1 and 2's one side: HiP, the oracle or random (whose one value is its seed).
hip::methods::MethodChoice parse_selection(const std::string& s, uint64_t seed, const Fields& f) {
  hip::methods::MethodChoice m;
  m.name = s;
  if (s == "random") m.values = {{"random_seed", static_cast<double>(seed)}};
  if (s != "hip" && s != "oracle" && s != "random") f.fail("params.selection '" + s + "' is not hip, random or oracle");
  return m;
}

// Format 3's "methods" list: registry methods, each once, each holding exactly its resolved values.
std::vector<CapturedMethod> parse_methods(const json& list, const hip::HipParams& p, const Fields& f) {
  if (!list.is_array() || list.empty()) f.fail("'methods' is not a non-empty list");
  std::vector<CapturedMethod> out;
  for (const json& entry : list) {
    CapturedMethod m;
    m.choice.name = f.text(entry, "name");
    const json& values = f.at(entry, "values");
    if (!values.is_object()) f.fail("methods: " + m.choice.name + "'s values are not an object");
    for (const auto& [name, value] : values.items()) {
      if (!value.is_number()) f.fail("methods: " + m.choice.name + "'s value " + name + " is not a number");
      m.choice.values[name] = value.get<double>();
    }
    try {
      hip::methods::validate_choice(m.choice, p);
    } catch (const std::invalid_argument& e) {
      f.fail("methods: " + m.choice.name + ": " + e.what());
    }
    for (const CapturedMethod& held : out)
      if (held.choice.name == m.choice.name) f.fail("methods: '" + m.choice.name + "' is listed twice");
    m.mask_refreshes = f.count(entry, "mask_refreshes");
    out.push_back(std::move(m));
  }
  return out;
}

// Format 3's columns are what this reader knows (a writer that reorders them writes a new version).
void check_method_columns(const json& m, const Fields& f) {
  const json& cols = f.at(m, layout::kMethodColumns);
  auto same = [](const json& j, const auto& names) {
    if (!j.is_array() || j.size() != names.size()) return false;
    for (size_t i = 0; i < names.size(); ++i)
      if (j[i] != names[i]) return false;
    return true;
  };
  if (!same(f.at(cols, "scalars"), layout::kMethodScalarColumns) || !same(f.at(cols, "quality"), layout::kQualityColumns))
    f.fail("method_columns are not the columns this hipstudio reads");
}

// Checks format and version; returns the version.
int check_version(const json& m, const Fields& f, const std::string& what) {
  if (!m.is_object() || !m.contains("format") || m["format"] != kCaptureFormat)
    throw InputError(what + ": not a HiP Studio capture (manifest.json does not say format '" + std::string(kCaptureFormat) + "')");
  const int64_t version = f.integer(m, "format_version");
  if (version > 1000000) f.fail("format_version " + std::to_string(version) + " is not a version number");
  const int64_t needs = m.contains("min_reader_version") ? f.integer(m, "min_reader_version") : version;
  const std::string writer = m.contains("tool") && m["tool"].is_object() && m["tool"].contains("version") && m["tool"]["version"].is_string()
                                 ? " by hipstudio " + m["tool"]["version"].get<std::string>()
                                 : "";
  if (needs > kCaptureFormatVersion)
    throw InputError(what + ": capture format version " + std::to_string(version) + " (written" + writer +
                     ") needs a reader of version " + std::to_string(needs) + " or newer; this hipstudio reads versions " +
                     std::to_string(kCaptureOldestReadable) + " to " + std::to_string(kCaptureFormatVersion) + ": update hipstudio");
  if (version < kCaptureOldestReadable)
    throw InputError(what + ": capture format version " + std::to_string(version) + " is older than this hipstudio reads (" +
                     std::to_string(kCaptureOldestReadable) + " to " + std::to_string(kCaptureFormatVersion) +
                     "); open it with the hipstudio release that wrote it");
  if (needs < 1 || needs > version) f.fail("min_reader_version must lie in [1, format_version]");
  return static_cast<int>(version);
}

json parse_manifest(const Entries& entries, const std::string& what) {
  auto it = entries.find("manifest.json");
  if (it == entries.end()) throw InputError(what + ": not a HiP Studio capture (no manifest.json inside)");
  check_entry_crc(it->second, what);
  json m = json::parse(it->second.data, nullptr, false);
  if (m.is_discarded()) throw InputError(what + ": damaged capture: manifest.json is not valid JSON");
  return m;
}

// The container checked, each entry a view into `bytes`; an entry's CRC-32 is checked when it is read.
Entries entry_map(std::string_view bytes, const std::string& what) {
  Entries out;
  for (ZipEntryView& e : zip_index(bytes, what)) {
    std::string name = e.name;
    out.emplace(std::move(name), std::move(e));
  }
  return out;
}

// Whether every layer of an `architecture` model is plain attention (no window, soft-cap or
// query_pre_attn_scalar key in its table entry): a capture of one that lacks analysis/layer_math
// reads back right with the default maths.
bool plain_attention_architecture(const std::string& architecture) {
  if (architecture == "llama2.c") return true;
  const Architecture* arch = find_architecture(architecture);
  if (!arch || arch->window_form != WindowForm::kNone) return false;
  for (const char* key : arch->maths_keys) {
    const std::string k = key;
    if (k == "attn_logit_softcapping" || k == "query_pre_attn_scalar" || k == "sliding_window") return false;
  }
  return true;
}

}  // namespace

Capture decode_capture(std::string_view bytes, const std::string& what, const CaptureReadOptions& options) {
  const auto entries = entry_map(bytes, what);
  const json m = parse_manifest(entries, what);
  const Fields f(what);
  Capture c;
  c.format_version = check_version(m, f, what);
  c.manifest = m;
  const Arrays ar(entries, f.at(m, "arrays"), f, what, options);
  const std::string content = f.text(m, "content_sha256");
  if (ar.hashed_all() && content != ar.content_sha256()) f.fail("content_sha256 does not match the arrays (an array was replaced)");

  // Identity and parameters.
  c.info.run.tool_version = f.text(f.at(m, "tool"), "version");
  c.info.run.model = f.text(f.at(m, "model"), "name");
  c.info.run.architecture = f.text(f.at(m, "model"), "architecture");
  c.info.model_sha256 = f.text(f.at(m, "model"), "sha256");
  c.info.run.device = f.text(m, "device");
  c.info.dtype = f.text(m, "dtype");
  c.info.created = f.text(m, "created");
  c.info.run.prompt = f.text(f.at(m, "prompt"), "text");
  const json& views = f.at(m, "views");
  if (!views.is_array()) f.fail("'views' is not a list");
  for (const json& v : views) {
    const auto& known = capture_view_names();
    if (!v.is_string() || std::find(known.begin(), known.end(), v.get<std::string>()) == known.end())
      f.fail("'views' holds " + v.dump() + ", not one of mask, iterations, locality, cache, latency");
    c.info.views.push_back(v.get<std::string>());
  }

  PairedAnalysis& a = c.analysis;
  const json& p = f.at(m, "params");
  AnalysisOptions& o = a.options;
  using hip::HipField;
  const auto key = [](HipField field) { return hip::hip_param_field(field).manifest_key; };
  for (HipField field : hip::kHipSizeFields) *hip::hip_size_field(o.hip.hip, field) = f.integer(p, key(field));
  o.hip.hip.rho = f.number(p, key(HipField::kRho));
  o.hip.hip.causal = f.boolean(p, "causal");
  try {
    hip::validate_hip_params(o.hip.hip);
  } catch (const hip::HipParamError& e) {
    f.fail(std::string("params break a HiP rule: ") + e.what());
  }
  for (HipField field : {HipField::kDenseLayers, HipField::kRefreshEvery}) *params_count(o, field) = f.count(p, key(field));
  if (c.format_version >= 3) {
    c.methods = parse_methods(f.at(m, layout::kMethods), o.hip.hip, f);
    check_method_columns(m, f);
    if (f.text(p, "selection") != c.methods[0].choice.name) f.fail("params.selection is not the first of 'methods'");
    if (f.unsigned_integer(p, "selection_seed") != layout::selection_seed(c.methods[0].choice))
      f.fail("params.selection_seed is not the first method's seed");
    o.hip.method = c.methods[0].choice;
  } else {
    o.hip.method = parse_selection(f.text(p, "selection"), f.unsigned_integer(p, "selection_seed"), f);
  }
  o.decode_steps = f.count(p, key(HipField::kDecodeSteps));
  o.force_dense_tokens = f.boolean(p, "force_dense_tokens");
  o.context_limit = f.count(p, "context_limit");
  o.random_seed = f.unsigned_integer(p, "random_seed");

  // Dimensions every array is checked against.
  const json& dims = f.at(m, "dims");
  const int64_t L = f.count(dims, "layers"), H = f.count(dims, "heads"), G = f.count(dims, "kv_heads");
  const int64_t D = f.count(dims, "head_dim"), T = f.count(dims, "tokens"), S = f.count(dims, "decode_records");
  const int64_t QB = (T + o.hip.hip.b_q - 1) / o.hip.hip.b_q, Kb = hip::hip_kb(o.hip.hip), key_blocks = (T + o.hip.hip.b_k - 1) / o.hip.hip.b_k;

  a.prompt_ids = ar.get<int32_t>("analysis/prompt_ids", {T});
  const json& tokens = f.at(f.at(m, "prompt"), "tokens");
  if (!tokens.is_array() || tokens.size() != a.prompt_ids.size()) f.fail("prompt.tokens disagrees with analysis/prompt_ids");
  for (size_t i = 0; i < a.prompt_ids.size(); ++i)
    if (!tokens[i].is_number_integer() || tokens[i].get<int64_t>() != a.prompt_ids[i]) f.fail("prompt.tokens disagrees with analysis/prompt_ids");
  a.dense = read_side(ar, "analysis/dense/", L, T);
  auto quality_rows = [&](const std::string& name) {
    const auto quality = ar.get<double>(name, {L, H, 6});
    std::vector<std::vector<HeadQuality>> rows(static_cast<size_t>(L));
    for (int64_t l = 0; l < L; ++l)
      for (int64_t h = 0; h < H; ++h) {
        const double* v = quality.data() + (l * H + h) * 6;
        rows[static_cast<size_t>(l)].push_back({v[0], v[1], v[2], v[3], v[4], v[5]});
      }
    return rows;
  };
  if (c.format_version >= 3) {
    const auto dense = ar.get<double>("analysis/dense/scalars", {2});
    a.dense.mean_nll = dense[0];
    a.dense.ppl = dense[1];
    for (CapturedMethod& cm : c.methods) {
      const std::string& n = cm.choice.name;
      cm.side = read_side(ar, "methods/" + n + "/", L, T);
      const auto scalars = ar.get<double>(layout::method_array(n, "scalars"), {4});
      cm.side.mean_nll = scalars[0];
      cm.side.ppl = scalars[1];
      cm.kl = scalars[2];
      cm.top1_agreement = scalars[3];
      cm.quality = quality_rows(layout::method_array(n, "quality"));
    }
  } else {
    const auto scalars = ar.get<double>("analysis/scalars", {6});
    a.dense.mean_nll = scalars[0];
    a.dense.ppl = scalars[1];
    CapturedMethod cm;
    cm.choice = o.hip.method;
    cm.side = read_side(ar, "analysis/hip/", L, T);
    cm.side.mean_nll = scalars[2];
    cm.side.ppl = scalars[3];
    cm.kl = scalars[4];
    cm.top1_agreement = scalars[5];
    cm.quality = quality_rows("analysis/quality");
    c.methods.push_back(std::move(cm));
  }
  // The side the views show: the first method's.
  const CapturedMethod& first = c.methods.front();
  a.hip = first.side;
  a.kl = first.kl;
  a.top1_agreement = first.top1_agreement;
  const auto layer_rows = ar.get<int64_t>("analysis/layers", {L, 2});
  for (int64_t l = 0; l < L; ++l) {
    LayerQuality q;
    q.layer = layer_rows[2 * l];
    q.dense = layer_rows[2 * l + 1] != 0;
    q.heads = first.quality[static_cast<size_t>(l)];
    a.layers.push_back(std::move(q));
  }
  if (ar.has("analysis/layer_math")) {
    const auto maths = ar.get<double>("analysis/layer_math", {L, 3});
    for (int64_t l = 0; l < L; ++l) {
      const double* v = maths.data() + l * 3;
      if (!(v[0] >= 0 && v[0] == std::floor(v[0]) && v[0] < 9.0e15) || !(v[1] >= 0 && std::isfinite(v[1])) ||
          !(v[2] >= 0 && std::isfinite(v[2])))
        f.fail("analysis/layer_math row " + std::to_string(l) + " is not a window >= 0, scale >= 0 and soft-cap >= 0");
      a.layers[static_cast<size_t>(l)].math = ViewsMath{static_cast<int64_t>(v[0]), hip::ScoreTransform{v[1], v[2]}};
    }
  } else if (!plain_attention_architecture(c.info.run.architecture)) {
    // A capture without the per-layer maths: only a model whose every layer is plain
    // attention reads back right (its layers keep the default ViewsMath).
    f.fail("analysis/layer_math is missing, and a " + c.info.run.architecture +
           " model can have windowed, soft-capped or rescaled layers the views need; capture the run again "
           "with this hipstudio");
  }
  const auto decode = ar.get<int64_t>("analysis/decode", {S, 7});
  for (int64_t s = 0; s < S; ++s) {
    const int64_t* v = decode.data() + s * 7;
    a.decode.push_back({v[0], v[1], static_cast<int32_t>(v[2]), static_cast<int32_t>(v[3]), v[4] != 0, v[5], v[6]});
  }
  // Token text (optional): where present, one string per id.
  auto pieces = [&f](const json& list, size_t n, const std::string& field) {
    if (!list.is_array() || list.size() != n) f.fail(field + " is not a list of " + std::to_string(n) + " strings, one per token");
    std::vector<std::string> out;
    for (const json& p : list) {
      if (!p.is_string()) f.fail(field + " holds " + p.dump() + ", not a string");
      out.push_back(p.get<std::string>());
    }
    return out;
  };
  if (m.at("prompt").contains(layout::kPromptPieces))
    c.info.prompt_pieces = pieces(m.at("prompt").at(layout::kPromptPieces), a.prompt_ids.size(), "prompt.pieces");
  if (m.contains(layout::kDecodePieces)) {
    const json& d = f.at(m, layout::kDecodePieces);
    c.info.decode_dense_pieces = pieces(f.at(d, "dense"), a.decode.size(), "decode_pieces.dense");
    c.info.decode_hip_pieces = pieces(f.at(d, "hip"), a.decode.size(), "decode_pieces.hip");
  }
  a.mask_refreshes = f.count(m, "mask_refreshes");
  if (a.mask_refreshes > S) f.fail("mask_refreshes exceeds the decode records");
  if (c.format_version < 3) c.methods[0].mask_refreshes = a.mask_refreshes;
  for (const CapturedMethod& cm : c.methods)
    if (cm.mask_refreshes > S) f.fail("methods: " + cm.choice.name + "'s mask_refreshes exceeds the decode records");
  // The manifest's summaries (what `open --print` shows) are the arrays' numbers.
  if (c.format_version >= 3)
    for (size_t i = 0; i < c.methods.size(); ++i)
      if (f.at(m.at(layout::kMethods)[i], "summary") != method_summary_json(c.methods[i], a.layers))
        f.fail("methods: " + c.methods[i].choice.name + "'s summary disagrees with its arrays");
  const json& access = f.at(m, "access");
  a.access.steps = f.count(access, "steps");
  a.access.layers = f.count(access, "layers");
  a.access.heads = f.count(access, "heads");
  a.access.first_layer = f.count(access, "first_layer");
  if (access.contains("hip_layers")) {
    const json& hl = access["hip_layers"];
    if (!hl.is_array()) f.fail("access.hip_layers is not a list");
    for (const json& l : hl) {
      if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() >= L)
        f.fail("access.hip_layers holds an entry that is not a layer of the model");
      a.access.hip_layers.push_back(l.get<int64_t>());
    }
    if (!a.access.hip_layers.empty() && a.access.hip_layers.front() != a.access.first_layer)
      f.fail("field 'access.first_layer' is " + std::to_string(a.access.first_layer) + " but access.hip_layers starts at layer " +
             std::to_string(a.access.hip_layers.front()));
  }
  if (a.access.steps > 0 && a.access.layers * a.access.heads > (int64_t{1} << 40) / a.access.steps)
    f.fail("access sizes are out of range");
  if (a.access.hip_layers.empty() && a.access.first_layer + a.access.layers > L) f.fail("access.first_layer + access.layers exceeds the model's layers");
  const int64_t lists = a.access.steps * a.access.layers * a.access.heads;
  a.access.mask_keys = read_ragged(ar, "access/mask", lists);
  a.access.sparse_keys = read_ragged(ar, "access/sparse", lists);
  try {  // the rules the offloading simulator replays them under: positions in [0, T + steps), ascending
    offload::validate_streams(a.access, T + a.access.steps);
  } catch (const InputError& e) {
    ar.fail("access/*_keys", std::string("breaks a stream rule: ") + e.what());
  }

  // The layers with per-layer arrays: version 1 has every layer, later versions list them.
  if (c.format_version >= 2) {
    const json& listed = f.at(dims, "view_layers");
    if (!listed.is_array()) f.fail("dims.view_layers is not a list");
    for (const json& l : listed) {
      if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() >= L ||
          (!c.view_layers.empty() && l.get<int64_t>() <= c.view_layers.back()))
        f.fail("dims.view_layers must list distinct layers of the model in ascending order");
      c.view_layers.push_back(l.get<int64_t>());
    }
  } else {
    for (int64_t l = 0; l < L; ++l) c.view_layers.push_back(l);
  }

  const std::string inputs_dtype = c.format_version >= 2 ? f.text(dims, "inputs_dtype") : "f32";
  if (inputs_dtype != "f32" && inputs_dtype != "bf16" && inputs_dtype != "f16")
    f.fail("dims.inputs_dtype is '" + inputs_dtype + "', not f32, bf16 or f16");
  if (f.boolean(dims, "inputs") && options.inputs) {
    for (int64_t l : c.view_layers) {
      LayerInputs in;
      in.layer = l;
      in.heads = H;
      in.kv_heads = G;
      in.tokens = T;
      in.dim = D;
      in.set_host({ar.get_floats(layout::layer_array("inputs", l, "q"), {H, T, D}, inputs_dtype),
                   ar.get_floats(layout::layer_array("inputs", l, "k"), {G, T, D}, inputs_dtype),
                   ar.get_floats(layout::layer_array("inputs", l, "v"), {G, T, D}, inputs_dtype)});
      a.inputs.push_back(std::move(in));
    }
  }

  // Views.
  if (f.boolean(m, "masks")) {
    for (CapturedMethod& cm : c.methods) {
      for (int64_t l : c.view_layers) {
        LayerMaskViews lm;
        lm.layer = l;
        lm.params = o.hip.hip;
        lm.method = cm.choice.name;
        if (lm.layer >= 0 && lm.layer < static_cast<int64_t>(a.layers.size())) lm.math = a.layers[static_cast<size_t>(lm.layer)].math;
        // Format 3: masks/L<l>/<method>/{blocks, oracle_blocks, ...}; before it masks/L<l>/{hip_blocks, oracle_blocks, ...}.
        const bool keyed = c.format_version >= 3;
        auto array = [&](const std::string& n) {
          return keyed ? layout::method_mask_array(l, cm.choice.name, n.c_str()) : layout::layer_array("masks", l, n.c_str());
        };
        const auto dense_from = ar.get<int64_t>(array("dense_from"), {QB});
        const bool search = cm.choice.is_hip();
        lm.hip = read_mask(ar, [&](const char* n) { return array(keyed ? std::string(n) : std::string("hip_") + n); }, search, H, QB,
                           Kb, key_blocks, dense_from);
        lm.oracle = read_mask(ar, [&](const char* n) { return array(std::string("oracle_") + n); }, false, H, QB, Kb, key_blocks,
                              dense_from);
        lm.random = read_mask(ar, [&](const char* n) { return array(std::string("random_") + n); }, false, H, QB, Kb, key_blocks,
                              dense_from);
        lm.recall = ar.get<double>(array("recall"), {H, QB});
        lm.random_recall = ar.get<double>(array("random_recall"), {H, QB});
        cm.masks.push_back(std::move(lm));
      }
    }
    c.masks = c.methods[0].masks;
  }

  const json& traces = f.at(m, "traces");
  if (!traces.is_array()) f.fail("'traces' is not a list");
  for (size_t i = 0; i < traces.size(); ++i) {
    const auto header = ar.get<int64_t>(layout::trace_array(i, "header"), {9});
    CapturedTrace ct;
    ct.layer = header[0];
    hip::MaskTrace& t = ct.trace;
    t.head = header[1];
    t.query_block = header[2];
    if (ct.layer != f.integer(traces[i], "layer") || t.head != f.integer(traces[i], "head") ||
        t.query_block != f.integer(traces[i], "query_block") || ct.layer < 0 || ct.layer >= L || t.head < 0 || t.head >= H ||
        t.query_block < 0 || t.query_block >= QB)
      ar.fail(layout::trace_array(i, "header"), "disagrees with the manifest's trace list or the prompt's shape");
    t.row_begin = header[3];
    t.row_end = header[4];
    t.p0 = header[5];
    t.lo = header[6];
    t.hi = header[7];
    t.dense_from = header[8];
    const auto initial = ar.get<int32_t>(layout::trace_array(i, "initial"), {2, -1});
    t.initial_begin.assign(initial.begin(), initial.begin() + initial.size() / 2);
    t.initial_end.assign(initial.begin() + initial.size() / 2, initial.end());
    t.blocks = ar.get<int32_t>(layout::trace_array(i, "blocks"), {-1});
    auto in_prompt = [&](int64_t b) { return b >= 0 && b <= key_blocks; };  // ends may equal key_blocks
    bool ok = in_prompt(t.lo) && in_prompt(t.hi) && t.lo <= t.hi;
    for (int32_t b : initial) ok = ok && in_prompt(b);
    for (int32_t b : t.blocks) ok = ok && b >= 0 && b < key_blocks;
    if (!ok) ar.fail(layout::trace_array(i, "header"), "holds key blocks outside the prompt");
    const auto branches = ar.get<int32_t>(layout::trace_array(i, "branches"), {-1, 5});
    const auto scores = ar.get<double>(layout::trace_array(i, "scores"), {static_cast<int64_t>(branches.size() / 5)});
    for (size_t b = 0; b < scores.size(); ++b) {
      const int32_t* v = branches.data() + b * 5;
      if (v[0] < 0 || v[0] > 64 || v[0] < static_cast<int32_t>(t.iterations.size()) - 1)
        ar.fail(layout::trace_array(i, "branches"), "has iteration numbers out of order");
      if (!(v[1] >= 0 && v[1] < v[2] && v[2] <= key_blocks && v[3] >= v[1] && v[3] < v[2]))
        ar.fail(layout::trace_array(i, "branches"), "holds a branch outside the prompt's key blocks");
      t.iterations.resize(static_cast<size_t>(v[0]) + 1);
      t.iterations[v[0]].branches.push_back({v[1], v[2], v[3], scores[b], v[4] != 0});
    }
    if (ar.has(layout::trace_array(i, "oracle_scores")))
      ct.oracle_scores = ar.get<double>(layout::trace_array(i, "oracle_scores"), {t.hi - t.lo});
    c.traces.push_back(std::move(ct));
  }

  const json& locality = f.at(m, "locality");
  if (!locality.is_null()) {
    const json& deltas = f.at(locality, "deltas");
    if (!deltas.is_array()) f.fail("locality.deltas is not a list");
    for (const json& d : deltas) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1) f.fail("locality.deltas holds " + d.dump() + ", not a distance >= 1");
      c.locality_params.deltas.push_back(d.get<int64_t>());
    }
    c.locality_params.bins = f.count(locality, "bins");
    const int64_t nd = static_cast<int64_t>(c.locality_params.deltas.size()), bins = c.locality_params.bins;
    c.locality_queries = ar.get<int64_t>("locality/queries", {-1});
    for (int64_t l : c.view_layers) {
      const auto stats = ar.get<double>(layout::layer_array("locality", l, "stats"), {H, nd, 7});
      const auto counts = ar.get<int64_t>(layout::layer_array("locality", l, "counts"), {H, nd, bins});
      std::vector<hip::ScoreLocality> heads;
      for (int64_t h = 0; h < H; ++h) {
        hip::ScoreLocality sl;
        sl.head = h;
        sl.queries = c.locality_queries;
        for (int64_t d = 0; d < nd; ++d) {
          const double* v = stats.data() + (h * nd + d) * 7;
          hip::DeltaStats ds;
          // Compared as doubles before any cast: NaN or 1e300 cast to int64 is undefined (found by fuzzing).
          if (!(v[0] == static_cast<double>(c.locality_params.deltas[d]))) ar.fail(layout::layer_array("locality", l, "stats"), "disagrees with locality.deltas");
          if (!(v[1] >= 0 && v[1] <= 9.0e18)) ar.fail(layout::layer_array("locality", l, "stats"), "holds a pair count that is not a count");
          ds.delta = c.locality_params.deltas[d];
          ds.pairs = static_cast<int64_t>(v[1]);
          ds.mean = v[2];
          ds.stddev = v[3];
          ds.hist_lo = v[4];
          ds.hist_hi = v[5];
          ds.kl_to_normal = v[6];
          const int64_t* cnt = counts.data() + (h * nd + d) * bins;
          ds.counts.assign(cnt, cnt + bins);
          sl.deltas.push_back(std::move(ds));
        }
        heads.push_back(std::move(sl));
      }
      c.locality.push_back(std::move(heads));
    }
  }

  const json& off = f.at(m, "offload");
  if (!off.is_null()) {
    c.has_offload = true;
    const json& cfg = f.at(off, "config");
    offload::OffloadConfig& oc = c.offload_config;
    oc.cache_factor = f.number(cfg, "cache_factor");
    oc.mask_bank_tokens = f.count(cfg, "mask_bank_tokens");
    oc.sparse_bank_tokens = f.count(cfg, "sparse_bank_tokens");
    const std::string table = f.text(cfg, "page_table"), policy = f.text(cfg, "policy");
    oc.table = table == "hash" ? offload::PageTableKind::Hash : offload::PageTableKind::Vector;
    oc.policy = policy == "LFU" ? offload::EvictionPolicy::Lfu : offload::EvictionPolicy::Lru;
    if (table != offload::page_table_kind_name(oc.table) || policy != offload::eviction_policy_name(oc.policy))
      f.fail("offload.config names an unknown page table or policy");
    oc.k = f.count(cfg, "k");
    oc.b_sk = f.count(cfg, "b_sk");
    oc.context_tokens = f.count(cfg, "context_tokens");
    oc.mask_bytes_per_token = f.count(cfg, "mask_bytes_per_token");
    oc.sparse_bytes_per_token = f.count(cfg, "sparse_bytes_per_token");
    oc.build_access_map = f.boolean(cfg, "build_access_map");
    try {
      offload::validate_config(oc);
    } catch (const InputError& e) {
      f.fail(std::string("offload.config: ") + e.what());
    }
    offload::OffloadResult& r = c.offload;
    r.steps = f.count(off, "steps");
    r.layers = f.count(off, "layers");
    r.heads = f.count(off, "heads");
    r.first_layer = f.count(off, "first_layer");
    for (int64_t i = 0; i < a.access.layers; ++i) r.hip_layers.push_back(a.access.model_layer(i));
    r.context_tokens = f.count(off, "context_tokens");
    if (r.steps != a.access.steps || r.layers != a.access.layers || r.heads != a.access.heads ||
        r.first_layer != a.access.first_layer || r.context_tokens != oc.context_tokens)
      f.fail("the offload sizes disagree with the access streams or the offload config");
    read_context(ar, f, f.at(off, "mask"), "mask", offload::OffloadContext::Mask, r, r.mask);
    read_context(ar, f, f.at(off, "sparse"), "sparse", offload::OffloadContext::Sparse, r, r.sparse);
  }

  const json& images = f.at(m, "images");
  if (!images.is_array()) f.fail("'images' is not a list");
  for (const json& im : images) {
    if (!im.is_string()) f.fail("'images' holds a non-string");
    const std::string file = im.get<std::string>();
    auto it = entries.find(file);
    if (file.rfind("images/", 0) != 0 || it == entries.end()) f.fail("image '" + file + "' is listed but missing from the file");
    check_entry_crc(it->second, what);
    c.images.push_back({file.substr(7), std::string(it->second.data)});
  }
  check_capture_invariants(c, what);  // the fields against each other, once every array is known sound
  return c;
}

Capture read_capture(const std::string& path, const CaptureReadOptions& options) {
  const MappedFile file(path);  // the arrays are parsed out of the mapping; nothing refers to it after
  return decode_capture(file.bytes(), path, options);
}

std::string read_capture_array(const std::string& path, const std::string& name) {
  const MappedFile file(path);
  const auto entries = entry_map(file.bytes(), path);
  const json m = parse_manifest(entries, path);
  const Fields f(path);
  check_version(m, f, path);
  const json& listed = f.at(m, "arrays");
  const std::string npy = name + ".npy";
  if (!listed.is_object() || !listed.contains(npy))
    throw InputError(path + " holds no array '" + name + "' (`unzip -l CAPTURE` lists them; leave out the .npy)");
  const auto it = entries.find(npy);
  if (it == entries.end()) throw InputError(path + ": damaged capture: array '" + name + "' is listed in the manifest but missing from the file");
  check_entry_crc(it->second, path);
  const NpyView a = parse_npy_view(reinterpret_cast<const unsigned char*>(it->second.data.data()), it->second.data.size(), path + ": " + npy);
  const json& spec = listed.at(npy);
  if (f.text(spec, "dtype") != npy_type_name(a.dtype) || f.at(spec, "shape") != json(a.shape))
    throw InputError(path + ": damaged capture: array '" + name + "' has another dtype or shape than the manifest says");
  return std::string(it->second.data);
}

nlohmann::json read_capture_manifest(const std::string& path) {
  const MappedFile file(path);
  const auto entries = entry_map(file.bytes(), path);
  json m = parse_manifest(entries, path);
  check_version(m, Fields(path), path);
  return m;
}

}  // namespace hipstudio::captures
