// `hipstudio mask` (HiP masks, oracle and random baseline for captured Q/K[/V], and the masks of
// the other selection methods --methods lists, written as .npy + metrics.json) and `hipstudio bench mask` (how mask estimation scales against dense scores).
// The computation lives in kernels/mask_report and kernels/mask_bench; this file reads, checks
// and writes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/bench_mask_cuda.h"
#include "app/cli_options.h"
#include "app/cli_paths.h"
#include "app/commands.h"
#include "app/hip_options.h"
#include "app/method_options.h"
#include "captures/atomic_file.h"
#include "captures/npy.h"
#include "engine/formats/dtype.h"
#include "engine/formats/errors.h"
#include "engine/formats/safetensors.h"
#include "kernels/dot_f64.h"
#include "kernels/hip_params.h"
#include "kernels/mask_bench.h"
#include "kernels/mask_report.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::app {
namespace {

using hip::HipParams;

// ---- inputs ------------------------------------------------------------------------------------

struct FloatTensor {
  std::string source;           // "Q.npy" or "capture.safetensors:q" (for messages)
  std::vector<int64_t> shape;
  std::vector<float> data;      // C order
};

bool is_safetensors(const std::string& path) {
  return path.size() >= 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// A float32 tensor from .npy (must be '<f4') or from a .safetensors file (F32, or F16 / BF16 / F64
// converted to float32, since captures are often stored in the model's dtype).
FloatTensor load_float_tensor_data(const std::string& path, const std::string& name) {
  FloatTensor t;
  if (is_safetensors(path)) {
    const SafetensorsFile file(path);
    const TensorInfo& info = file.get(name);
    t.source = path + ":" + name;
    t.shape = info.shape;
    const int64_t n = info.numel();
    t.data.resize(static_cast<size_t>(n));
    switch (info.dtype) {
      case StoredDType::F32: std::copy_n(static_cast<const float*>(info.data), n, t.data.begin()); break;
      case StoredDType::F64:
        for (int64_t i = 0; i < n; ++i) t.data[i] = static_cast<float>(static_cast<const double*>(info.data)[i]);
        break;
      case StoredDType::F16:
        for (int64_t i = 0; i < n; ++i) t.data[i] = f16_to_float(static_cast<const uint16_t*>(info.data)[i]);
        break;
      case StoredDType::BF16:
        for (int64_t i = 0; i < n; ++i) t.data[i] = bf16_to_float(static_cast<const uint16_t*>(info.data)[i]);
        break;
      default:
        throw InputError(t.source + ": tensor dtype " + dtype_name(info.dtype) +
                         " is not a float type; store q, k, v as F32, F16, BF16 or F64");
    }
    return t;
  }
  captures::NpyArray a = captures::read_npy(path);
  a.require_dtype(captures::NpyDType::F32);
  t.source = path;
  t.shape = a.shape;
  const float* p = a.data<float>();
  t.data.assign(p, p + a.numel());
  return t;
}

// The tensor, refused (file, tensor and first bad index named) when it holds NaN or Inf: every mask,
// recall and error made from it would be NaN, with exit 0.
FloatTensor load_float_tensor(const std::string& path, const std::string& name, const std::string& option) {
  FloatTensor t = load_float_tensor_data(path, name);
  captures::require_finite(t.data.data(), t.shape, option + " " + t.source + (is_safetensors(path) ? "" : " (" + name + ")"),
                           "mask", "replace or drop the non-finite values where the tensor was captured");
  return t;
}

// Query positions from .npy: int64 or int32, shape [Tq].
std::vector<int64_t> load_positions(const std::string& path) {
  const captures::NpyArray a = captures::read_npy(path);
  a.require_rank(1, "[Tq]");
  std::vector<int64_t> pos(static_cast<size_t>(a.numel()));
  if (a.dtype == captures::NpyDType::I32) {
    std::copy_n(a.data<int32_t>(), pos.size(), pos.begin());
  } else {
    a.require_dtype(captures::NpyDType::I64);
    std::copy_n(a.data<int64_t>(), pos.size(), pos.begin());
  }
  return pos;
}

void require_rank3(const FloatTensor& t, const char* what) {
  if (t.shape.size() != 3) {
    throw InputError(t.source + ": expected 3 dimensions " + what + " but the tensor has shape " + shape_text(t.shape));
  }
}

// ---- mask --------------------------------------------------------------------------------------

struct MaskArgs {
  std::string q, k, v, positions, out;
  HipOptions hip;
  HipParams params;  // resolved from `hip` when the command runs
  MethodOptions methods;
  bool non_causal = false;
  uint64_t seed = 0;
  int threads = 0;
};

// Kernel-level argument errors (std::invalid_argument) are the user's: report them as InputError.
template <class F>
auto as_input_error(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

nlohmann::json nan_to_null(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  return a;
}

double mean_finite(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v) {
    if (std::isfinite(x)) s += x, ++n;
  }
  return n ? s / n : NAN;
}

std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// HiP, the oracle (every recall's reference) and the random baseline (seeded by --seed) are always
// computed and written under the names they had before --methods: mask.npy, oracle_mask.npy,
// random_mask.npy and dense_from.npy (HiP's ranges, which the oracle's and random's share). Every
// other method --methods lists is computed by its registry reference at the same budget.
bool always_reported(const std::string& method) { return method == "hip" || method == "oracle" || method == "random"; }

// Each listed method's own files, beside those: <method>_mask.npy (already written for oracle and
// random) and <method>_dense_from.npy; hip has mask.npy and dense_from.npy.
std::vector<std::string> method_output_names(const std::vector<ChosenMethod>& methods) {
  std::vector<std::string> names;
  for (const ChosenMethod& c : methods) {
    if (c.method->name == "hip") continue;
    if (!always_reported(c.method->name)) names.push_back(c.method->name + "_mask.npy");
    names.push_back(c.method->name + "_dense_from.npy");
  }
  return names;
}

// The files `mask` writes into --out (out.npy and dense_out.npy only with V).
std::vector<std::string> mask_output_names(bool have_v, const std::vector<ChosenMethod>& methods) {
  std::vector<std::string> names = {"mask.npy", "oracle_mask.npy", "random_mask.npy", "dense_from.npy"};
  const std::vector<std::string> own = method_output_names(methods);
  names.insert(names.end(), own.begin(), own.end());
  if (have_v) names.insert(names.end(), {"out.npy", "dense_out.npy"});
  names.push_back("metrics.json");
  return names;
}

// Every input file and --out checked before anything is read: no output may be an input.
void check_mask_paths(const MaskArgs& a, const std::vector<ChosenMethod>& methods) {
  CommandPaths paths;
  paths.input_files.push_back({"--q", a.q});
  if (!a.k.empty()) paths.input_files.push_back({"--k", a.k});
  if (!a.v.empty()) paths.input_files.push_back({"--v", a.v});
  if (!a.positions.empty()) paths.input_files.push_back({"--positions", a.positions});
  paths.output_folders.push_back({"--out", a.out});
  for (const std::string& name : mask_output_names(true, methods))
    paths.files_in_output_folders.push_back({"--out's " + name, (std::filesystem::path(a.out) / name).string()});
  check_command_paths(paths);
}

// Creates --out when missing; on failure removes what this run wrote (and the folder if it made it),
// so a failed run leaves the folder as it was.
class OutputFolder {
 public:
  explicit OutputFolder(std::string dir) : dir_(std::move(dir)) {
    std::error_code ec;
    created_ = !std::filesystem::exists(dir_, ec);
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw InputError("--out " + dir_ + ": cannot create the output folder: " + ec.message());
  }
  // Only a file this run creates is removed on failure: one that was there (a regular file, a FIFO,
  // a link) is either replaced whole or written in place (captures/atomic_file.h), never deleted.
  std::string path(const std::string& name) {
    const std::string p = (std::filesystem::path(dir_) / name).string();
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(p, ec))) written_.push_back(p);
    return p;
  }
  void keep() { keep_ = true; }
  ~OutputFolder() {
    if (keep_) return;
    std::error_code ec;
    for (const std::string& f : written_) std::filesystem::remove(f, ec);
    if (created_) std::filesystem::remove(dir_, ec);  // only when empty: never what someone else put there
  }

 private:
  std::string dir_;
  std::vector<std::string> written_;
  bool created_ = false, keep_ = false;
};

void run_mask(MaskArgs& a) {
  a.params = a.hip.kernel_params();
  a.params.causal = !a.non_causal;
  const std::vector<ChosenMethod> methods = a.methods.resolve(a.params);
  check_mask_paths(a, methods);
  if (a.k.empty() && !is_safetensors(a.q)) {
    throw InputError("--k is required unless --q names a .safetensors file holding tensors q and k");
  }
  const std::string k_path = a.k.empty() ? a.q : a.k;
  FloatTensor q = load_float_tensor(a.q, "q", "--q");
  FloatTensor k = load_float_tensor(k_path, "k", a.k.empty() ? "--q" : "--k");
  require_rank3(q, "[Hq, Tq, D]");
  require_rank3(k, "[Hkv, Tk, D]");
  FloatTensor v;
  bool have_v = !a.v.empty();
  if (have_v) {
    v = load_float_tensor(a.v, "v", "--v");
  } else if (a.k.empty() && SafetensorsFile(a.q).find("v")) {
    v = load_float_tensor(a.q, "v", "--q");  // q, k and v all from one capture
    have_v = true;
  }
  if (have_v && v.shape != k.shape) {
    throw InputError(v.source + ": V has shape " + shape_text(v.shape) + " but K has " + shape_text(k.shape) +
                     "; they must match");
  }
  if (q.shape[2] != k.shape[2]) {
    throw InputError(q.source + ": head dimension " + std::to_string(q.shape[2]) + " differs from K's " +
                     std::to_string(k.shape[2]) + " (" + k.source + ")");
  }
  std::vector<int64_t> positions;
  if (!a.positions.empty()) {
    positions = load_positions(a.positions);
    if (static_cast<int64_t>(positions.size()) != q.shape[1]) {
      throw InputError(a.positions + ": " + std::to_string(positions.size()) + " positions for " +
                       std::to_string(q.shape[1]) + " queries");
    }
  }
  hip::AttentionInputs in;
  in.q = q.data.data();
  in.k = k.data.data();
  in.v = have_v ? v.data.data() : nullptr;
  in.positions = positions.empty() ? nullptr : positions.data();
  in.hq = q.shape[0], in.tq = q.shape[1], in.d = q.shape[2];
  in.hkv = k.shape[0], in.tk = k.shape[1];
  try {
    hip::validate_attention_inputs(in, have_v);
  } catch (const std::invalid_argument& e) {
    throw InputError("inputs Q " + q.source + ", K " + k.source +
                     (a.positions.empty() ? "" : ", positions " + a.positions) + ": " + e.what());
  }

  hip::MaskReportOptions opt;
  opt.random_seed = a.seed;
  opt.threads = resolve_threads(a.threads);
  // The other listed methods' masks from the registry's CPU references (layer 0: one layer's inputs).
  std::vector<const ChosenMethod*> compared;
  std::vector<hip::MaskResult> compared_masks;
  std::vector<double> compared_seconds;
  for (const ChosenMethod& c : methods) {
    if (always_reported(c.method->name)) continue;
    hip::methods::SelectionContext ctx;
    ctx.hip = a.params;
    ctx.values = c.values;
    ctx.threads = opt.threads;
    const auto t0 = std::chrono::steady_clock::now();
    compared_masks.push_back(as_input_error([&] { return hip::methods::select_masks(*c.method, in, ctx); }));
    compared_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    compared.push_back(&c);
  }
  const hip::MaskReport r =
      as_input_error([&] { return hip::build_mask_report(in, a.params, opt, std::move(compared_masks)); });

  OutputFolder folder(a.out);
  const auto path = [&](const char* name) { return folder.path(name); };
  const hip::MaskResult& m = r.hip.mask;
  const std::vector<int64_t> mask_shape = {m.heads, m.query_blocks, m.kb};
  captures::write_npy(path("mask.npy"), mask_shape, m.blocks);
  captures::write_npy(path("oracle_mask.npy"), mask_shape, r.oracle.mask.blocks);
  captures::write_npy(path("random_mask.npy"), mask_shape, r.random.mask.blocks);
  captures::write_npy(path("dense_from.npy"), {m.query_blocks}, m.dense_from);
  for (size_t i = 0; i < compared.size(); ++i) {
    const hip::MaskResult& cm = r.compared[i].mask;
    const std::string name = compared[i]->method->name;
    captures::write_npy(path((name + "_mask.npy").c_str()), mask_shape, cm.blocks);
    captures::write_npy(path((name + "_dense_from.npy").c_str()), {cm.query_blocks}, cm.dense_from);
  }
  for (const ChosenMethod& c : methods)  // oracle and random share HiP's ranges
    if (c.method->name == "oracle" || c.method->name == "random")
      captures::write_npy(path((c.method->name + "_dense_from.npy").c_str()), {m.query_blocks}, m.dense_from);
  if (have_v) {
    const std::vector<int64_t> out_shape = {in.hq, in.tq, in.d};
    captures::write_npy(path("out.npy"), out_shape, to_float(r.hip.output.out));
    captures::write_npy(path("dense_out.npy"), out_shape, to_float(r.dense.out));
  }

  nlohmann::ordered_json j;
  j["params"] = {{"k", a.params.k}, {"b_q", a.params.b_q}, {"b_k", a.params.b_k}, {"b_sq", a.params.b_sq},
                 {"b_sk", a.params.b_sk}, {"sink", a.params.sink}, {"window", a.params.window},
                 {"rho", a.params.rho}, {"causal", a.params.causal}, {"random_seed", a.seed}};
  j["shapes"] = {{"hq", in.hq}, {"hkv", in.hkv}, {"tq", in.tq}, {"tk", in.tk}, {"d", in.d},
                 {"query_blocks", m.query_blocks}, {"kb", m.kb}, {"searched_query_blocks", r.searched_query_blocks}};
  std::vector<std::pair<std::string, const hip::SelectionReport*>> selections = {
      {"hip", &r.hip}, {"random", &r.random}, {"oracle", &r.oracle}};
  for (size_t i = 0; i < compared.size(); ++i) selections.push_back({compared[i]->method->name, &r.compared[i]});
  for (const auto& [name, s] : selections) {
    nlohmann::ordered_json e;
    e["recall_per_head"] = nan_to_null(s->recall_per_head);
    e["recall_searched_per_head"] = nan_to_null(s->recall_searched_per_head);
    e["mass_per_head"] = nan_to_null(s->mass.per_head);
    e["recall_mean"] = mean_finite(s->recall_per_head);
    e["mass_mean"] = mean_finite(s->mass.per_head);
    if (have_v) {
      e["output_error_per_head"] = nan_to_null(s->output_error);
      e["output_error_mean"] = mean_finite(s->output_error);
    }
    j[name] = e;
  }
  j["notes"] = {
      {"recall", "|selection ∩ oracle| / |oracle| per (head, query block), averaged per head; the oracle is the "
                 "exact top k/b_k key blocks by max score over the sampled query rows x every key of the block"},
      {"recall_searched", "the same mean over query blocks whose search range exceeds k/b_k blocks (null if none)"},
      {"mass", "dense softmax probability on the keys sparse attention uses (sink + blocks + window), per query, "
               "averaged per head"},
      {"output_error", "||O_sparse - O_dense||_2 / ||O_dense||_2 per head"}};
  for (const auto& c : compared) {
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& [name, value] : c->values) values[name] = value;
    j[c->method->name]["params"] = values;
  }
  j["seconds"] = {{"hip", r.seconds_hip}, {"oracle", r.seconds_oracle}, {"metrics", r.seconds_metrics}};
  for (size_t i = 0; i < compared.size(); ++i) j["seconds"][compared[i]->method->name] = compared_seconds[i];
  captures::write_file_atomic(path("metrics.json"), j.dump(2) + "\n");
  folder.keep();

  std::printf("hipstudio mask: %lld heads x %lld queries x %lld keys, d %lld; k %lld (Kb %lld), b_q %lld, b_k %lld\n",
              static_cast<long long>(in.hq), static_cast<long long>(in.tq), static_cast<long long>(in.tk),
              static_cast<long long>(in.d), static_cast<long long>(a.params.k), static_cast<long long>(m.kb),
              static_cast<long long>(a.params.b_q), static_cast<long long>(a.params.b_k));
  std::printf("query blocks searched: %lld of %lld\n", static_cast<long long>(r.searched_query_blocks),
              static_cast<long long>(m.query_blocks));
  std::printf("%-8s %10s %10s %12s\n", "", "recall", "mass", have_v ? "output err" : "");
  for (const auto& [name, s] : selections) {
    std::printf("%-8s %10.4f %10.4f", name.c_str(), mean_finite(s->recall_per_head), mean_finite(s->mass.per_head));
    if (have_v) std::printf(" %12.3e", mean_finite(s->output_error));
    std::printf("\n");
  }
  std::string names;
  for (const std::string& n : mask_output_names(have_v, methods)) names += (names.empty() ? "" : ", ") + n;
  std::printf("wrote %s (%s)\n", a.out.c_str(), names.c_str());
}

void register_mask(CLI::App& root) {
  auto a = std::make_shared<MaskArgs>();
  CLI::App* cmd = root.add_subcommand(
      "mask", "HiP masks, exact oracle and random baseline for captured Q/K[/V] (.npy float32 or .safetensors)");
  cmd->add_option("--q", a->q, "Q [Hq, Tq, D] (.npy, or .safetensors holding q and k (and v))")->required();
  cmd->add_option("--k", a->k, "K [Hkv, Tk, D] (.npy or .safetensors tensor k)");
  cmd->add_option("--v", a->v, "V [Hkv, Tk, D]: adds out.npy, dense_out.npy and output errors");
  cmd->add_option("--positions", a->positions, "positions [Tq] int64/int32 .npy (default: Tk - Tq + i)");
  a->hip.add_kernel_options(*cmd);
  cmd->add_flag("--non-causal", a->non_causal, "every query sees all keys");
  add_number(*cmd, "--seed", a->seed, "seed of the random-selection baseline", uint64_t{0});
  // random's own seed is --seed, as before the registry; every other method's parameter is a flag.
  a->methods.add_options(*cmd, "hip", {"random"});
  add_number(*cmd, "--threads", a->threads, "CPU threads (0 = all cores)", 0, max_threads());
  cmd->add_option("--out", a->out, "output folder (created when missing)")->required();
  cmd->callback([a] { run_mask(*a); });
}

// ---- bench mask --------------------------------------------------------------------------------

struct BenchArgs {
  std::string device = "cpu";
  int threads = 1;
  hip::MaskBenchOptions opt;
  HipOptions hip;
};

void run_bench(BenchArgs& a) {
  a.opt.params = a.hip.kernel_params();
  if (a.opt.tokens.empty()) throw InputError("--tokens needs at least one size");
  // At or below k every key block fits the budget: nothing is estimated, the times are zero and the
  // growth verdict would be made of noise. Such sizes are refused with the range that holds for this k.
  for (const int64_t t : a.opt.tokens)
    if (t <= a.opt.params.k)
      throw InputError("--tokens " + std::to_string(t) + " is out of range for --topk " + std::to_string(a.opt.params.k) +
                       ": give sizes from " + std::to_string(a.opt.params.k + 1) + " to " + std::to_string(int64_t{1} << 22) +
                       " (at or below k every key block fits the budget, so there is no mask to estimate)");
  a.opt.threads = resolve_threads(a.threads);
  if (a.device == "cuda") return run_bench_mask_cuda(a.opt);
  const HipParams& p = a.opt.params;
  std::printf("bench mask: CPU reference, one head, Gaussian Q/K, d %lld; k %lld, b_q %lld, b_k %lld, b_sq %lld, "
              "b_sk %lld, rho %.2f; float64 dots (%s)\n",
              static_cast<long long>(a.opt.dim), static_cast<long long>(p.k), static_cast<long long>(p.b_q),
              static_cast<long long>(p.b_k), static_cast<long long>(p.b_sq), static_cast<long long>(p.b_sk), p.rho,
              hip::dot_f64_uses_avx2() ? "AVX2" : "portable");
  std::printf("times: CPU seconds of one thread%s; dense = causal Q K^T with the same dot kernel\n",
              a.opt.threads == 1 ? "" : " (mask: wall time over --threads)");
  std::printf("%7s %10s %10s %9s %12s %10s %7s %6s %14s\n", "T", "mask (s)", "branches", "us/branch", "dense (s)*",
              "mask/dense", "timed*", "iters", "1 block+trace");
  std::fflush(stdout);
  const std::vector<hip::MaskBenchRow> rows = as_input_error([&] {
    return hip::run_mask_bench(a.opt, [](const hip::MaskBenchRow& r) {
      std::printf("%7lld %10.4f %10lld %9.3f %12.3f %10.4f %6.1f%% %6d %11.3f ms\n", static_cast<long long>(r.tokens),
                  r.mask_seconds, static_cast<long long>(r.branches),
                  r.branches ? 1e6 * r.mask_seconds / static_cast<double>(r.branches) : 0.0, r.dense_seconds,
                  r.mask_seconds / r.dense_seconds, 100.0 * std::min(1.0, r.dense_sampled_fraction),
                  r.single_iterations, r.single_ms);
      std::fflush(stdout);
    });
  });
  std::printf("* dense: %lld query blocks spread over T, each scored against all its causal keys, scaled to all "
              "T (T + 1) / 2 scores; 'timed' = the share actually run\n",
              static_cast<long long>(a.opt.dense_blocks));
  // Growth between consecutive sizes. HiP's search runs ceil(log2(N / Kb)) iterations over Kb nodes
  // per query block (N ~ T / b_k), so its work is T log2(T / k) (T log T, with the log shifted by
  // the fixed budget k); dense work is T^2.
  const auto tlog = [&](double t) { return t * std::max(1.0, std::log2(t / static_cast<double>(p.k))); };
  for (size_t i = 1; i < rows.size(); ++i) {
    const double t0 = static_cast<double>(rows[i - 1].tokens), t1 = static_cast<double>(rows[i].tokens);
    std::printf("T %lld -> %lld: mask time x%.2f, branches x%.2f | T log2(T/k) x%.2f, T log2 T x%.2f, T^2 x%.1f | "
                "dense x%.1f\n",
                static_cast<long long>(rows[i - 1].tokens), static_cast<long long>(rows[i].tokens),
                rows[i].mask_seconds / rows[i - 1].mask_seconds,
                static_cast<double>(rows[i].branches) / std::max<double>(1.0, static_cast<double>(rows[i - 1].branches)),
                tlog(t1) / tlog(t0), (t1 * std::log2(t1)) / (t0 * std::log2(t0)), (t1 / t0) * (t1 / t0),
                rows[i].dense_seconds / rows[i - 1].dense_seconds);
  }
  if (rows.size() >= 2) {
    const auto& f = rows[rows.size() - 2];
    const auto& l = rows.back();
    const double t0 = static_cast<double>(f.tokens), t1 = static_cast<double>(l.tokens);
    const double grew = l.mask_seconds / f.mask_seconds, model = tlog(t1) / tlog(t0), square = (t1 / t0) * (t1 / t0);
    // The largest step decides (smaller sizes are dominated by blocks whose range fits the budget);
    // whichever model is closer on a log scale is what the growth looks like.
    const bool looks_tlogt = std::abs(std::log(grew / model)) < std::abs(std::log(grew / square));
    std::printf("verdict: from T %lld to %lld mask time grew x%.2f against x%.2f for T log T and x%.1f for T^2 "
                "(dense: x%.1f): %s\n",
                static_cast<long long>(f.tokens), static_cast<long long>(l.tokens), grew, model, square,
                l.dense_seconds / f.dense_seconds,
                looks_tlogt ? "T log T" : "closer to T^2 than to T log T (check the us/branch column: cache misses?)");
  }
  const auto& l = rows.back();
  // What the GUI's Iterations panel recomputes when a slider moves: it stays interactive under ~5 ms.
  std::printf("one head, one query block and its trace at T = %lld: %.3f ms\n", static_cast<long long>(l.tokens), l.single_ms);
}

void register_bench_mask(CLI::App& bench) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = bench.add_subcommand("mask", "HiP mask estimation time vs dense QK^T over T (one head)");
  add_choice(*cmd, "--device", a->device, "cpu (the float64 reference) or cuda (the CUDA kernels, float32)", {"cpu", "cuda"});
  add_number_list(*cmd, "--tokens", a->opt.tokens, "sequence lengths T, comma-separated", int64_t{1}, int64_t{1} << 22);
  add_number(*cmd, "--dim", a->opt.dim, "head dimension", int64_t{1}, int64_t{1024});
  a->hip.add_kernel_options(*cmd);
  add_number(*cmd, "--threads", a->threads, "CPU threads for the full mask estimate (0 = all cores)", 0, max_threads());
  add_number(*cmd, "--dense-blocks", a->opt.dense_blocks, "cpu: query blocks timed for the dense estimate (cuda times every score)", int64_t{1}, int64_t{1} << 20);
  add_number(*cmd, "--repeats", a->opt.single_repeats, "cpu: runs of the single-block timing; cuda: runs of each timing (median)", 1, 100000);
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace

void register_mask_commands(CLI::App& root, CLI::App& bench) {
  register_mask(root);
  register_bench_mask(bench);
}

}  // namespace hipstudio::app
