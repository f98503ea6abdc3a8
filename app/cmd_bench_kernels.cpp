// `hipstudio bench kernels`: the CUDA HiP kernels against LibTorch's dense attention on the shapes
// of one Llama-3.1-8B layer (32 query heads, 8 KV heads, head dim 128, bf16). Prefill: mask
// estimation + block-sparse attention vs dense causal SDPA (flash, cuDNN); decode: mask refresh,
// cached-mask step and dense decode. CUDA events around each timed region, warm-up, median of
// repeats, inputs rotated over several sets so that L2 does not flatter the numbers. Prints a
// table and writes CSV. Without the CUDA kernels or a GPU it is an InputError (exit 2).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "app/cli_options.h"
#include "app/cli_paths.h"
#include "app/commands.h"
#include "app/gpu_check.h"
#include "captures/atomic_file.h"
#include "engine/formats/errors.h"
#include "kernels/hip_param_fields.h"
#include "kernels/torch/hip_torch.h"

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/hip_cuda.h"
#endif

namespace hipstudio::app {
namespace {

struct KernelBenchArgs {
  std::vector<int64_t> tokens{8192, 32768, 131072};
  std::vector<int64_t> batches{1, 32};
  std::vector<std::string> prefill_blocks{"32/1", "64/2"};  // b_q/b_sq pairs of the prefill rows
  std::string mode = "all";  // prefill, decode, all
  std::string csv = "bench_kernels.csv";
  int64_t heads = 32, kv_heads = 8, dim = 128, k = 512, b_k = 2, sink = 0, window = 0;
  int repeats = 20;
  bool dense = true;
};

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
using hip_torch::DenseBackend;

// "64/2" -> {64, 2}; anything else is an InputError naming the option.
std::pair<int64_t, int64_t> parse_block_pair(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash != std::string::npos && slash > 0 && slash + 1 < text.size()) {
      size_t used_q = 0, used_s = 0;
      const int64_t bq = std::stoll(text.substr(0, slash), &used_q);
      const int64_t bsq = std::stoll(text.substr(slash + 1), &used_s);
      if (used_q == slash && used_s == text.size() - slash - 1 && bq > 0 && bsq > 0) return {bq, bsq};
    }
  } catch (const std::exception&) {
  }
  throw InputError("--prefill-blocks wants b_q/b_sq pairs of positive integers such as 64/2, not '" + text + "'");
}

// Median milliseconds per call of fn(set) over `repeats` event-timed groups of `inner` calls,
// after `warmup` calls; set rotates over the input sets.
template <class F>
double median_ms(F&& fn, int sets, int repeats, double budget_ms = 2000.0) {
  for (int i = 0; i < std::max(2, sets); ++i) fn(i % sets);
  gpu::synchronize();
  const double one = gpu::time_ms([&] { fn(0); });
  const int inner = one < 0.05 ? 20 : one < 0.5 ? 5 : 1;  // groups of >= ~0.1 ms so event resolution does not matter
  const int reps = std::clamp(static_cast<int>(budget_ms / std::max(one * inner, 1e-3)), 3, repeats);
  std::vector<double> t;
  int call = 1;
  for (int r = 0; r < reps; ++r) {
    gpu::EventPair e;
    e.start();
    for (int i = 0; i < inner; ++i) fn(call++ % sets);
    t.push_back(e.stop_ms() / inner);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int sets_for(double bytes_per_set) {  // at least ~4x the L2 in flight across rotations
  return static_cast<int>(std::clamp(std::ceil(256e6 / bytes_per_set), 1.0, 8.0));
}

double dense_ms(const std::vector<at::Tensor>& q, const std::vector<at::Tensor>& k, const std::vector<at::Tensor>& v,
                DenseBackend b, int repeats, bool decode) {
  try {
    return median_ms(
        [&](int s) {
          if (decode) hip_torch::dense_decode(q[s], k[s], v[s], b);
          else hip_torch::dense_attention(q[s], k[s], v[s], true, b);
        },
        static_cast<int>(q.size()), repeats, 3000.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "note: dense %s unavailable here: %.160s\n", hip_torch::dense_backend_name(b), e.what());
    return NAN;
  }
}

void run(const KernelBenchArgs& a) {
  for (const std::string& pair : a.prefill_blocks) parse_block_pair(pair);  // bad pairs fail before any work
  require_cuda_kernels("bench kernels");
  CommandPaths paths;
  paths.output_files.push_back({"--csv", a.csv});
  check_command_paths(paths);
  const bool dense = a.dense && hip_torch::dense_attention_supported();
  std::ostringstream csv;  // written whole at the end, under the output rule of captures/atomic_file.h
  csv << "mode,T,batch,b_q,b_sq,k,b_k,mask_us,attn_us,total_us,dense_flash_us,dense_cudnn_us,speedup_vs_best_dense\n";
  const auto dev = at::Device(at::kCUDA, 0);
  const auto bf16 = at::TensorOptions().device(dev).dtype(at::kBFloat16);
  std::printf("bench kernels: %s; Hq %lld, Hkv %lld, d %lld, bf16; k %lld, b_k %lld, sink %lld, window %lld\n",
              gpu::device_name().c_str(), (long long)a.heads, (long long)a.kv_heads, (long long)a.dim, (long long)a.k,
              (long long)a.b_k, (long long)a.sink, (long long)a.window);
  std::printf("median of CUDA-event timings after warm-up; inputs rotated over sets to defeat L2%s\n",
              dense ? "" : "; dense baseline off (--no-dense or LibTorch < 2)");

  if (a.mode != "decode") {
    std::printf("\nprefill (batch 1, T queries, causal)\n%7s %4s %4s %9s %9s %9s %12s %12s %8s\n", "T", "b_q", "b_sq",
                "mask ms", "attn ms", "total ms", "dense flash", "dense cuDNN", "speedup");
    for (int64_t T : a.tokens) {
      const double bytes = static_cast<double>(T) * a.dim * 2 * (a.heads + 2 * a.kv_heads);
      const int sets = sets_for(bytes);
      std::vector<at::Tensor> q, k, v, ke, ve;
      for (int s = 0; s < sets; ++s) {
        q.push_back(at::randn({1, a.heads, T, a.dim}, bf16));
        k.push_back(at::randn({1, a.kv_heads, T, a.dim}, bf16));
        v.push_back(at::randn({1, a.kv_heads, T, a.dim}, bf16));
      }
      double flash = NAN, cudnn = NAN;
      if (dense) {
        std::vector<at::Tensor> qd, kd, vd;  // expanded heads: dense SDPA wants Hq K/V heads
        const int dsets = std::min(sets, static_cast<int>(std::max<double>(1, std::floor(2e9 / (bytes * 2.0)))));
        for (int s = 0; s < dsets; ++s) {
          qd.push_back(q[s]);
          kd.push_back(hip_torch::expand_kv_heads(k[s], a.heads));
          vd.push_back(hip_torch::expand_kv_heads(v[s], a.heads));
        }
        flash = dense_ms(qd, kd, vd, DenseBackend::kFlash, a.repeats, false);
        cudnn = dense_ms(qd, kd, vd, DenseBackend::kCuDNN, a.repeats, false);
      }
      for (const std::string& pair : a.prefill_blocks) {
        const auto [bq, bsq] = parse_block_pair(pair);
        hip::HipParams p;
        p.k = a.k, p.b_q = bq, p.b_k = a.b_k, p.b_sq = bsq, p.sink = a.sink, p.window = a.window;
        std::vector<hip_torch::MaskTensors> m;
        std::vector<at::Tensor> out;
        for (int s = 0; s < sets; ++s) {
          m.push_back(hip_torch::estimate_masks(q[s], k[s], p));
          out.push_back(at::empty_like(q[s]));
        }
        const double mask = median_ms([&](int s) { hip_torch::estimate_masks_into(m[s], q[s], k[s], p); }, sets, a.repeats);
        const double attn = median_ms(
            [&](int s) { hip_torch::sparse_attention(q[s], k[s], v[s], m[s].blocks, m[s].counts, p, {}, 0, out[s]); },
            sets, a.repeats);
        const double best = std::isnan(cudnn) ? flash : std::isnan(flash) ? cudnn : std::min(flash, cudnn);
        const double total = mask + attn;
        std::printf("%7lld %4lld %4lld %9.3f %9.3f %9.3f %12.3f %12.3f %7.2fx\n", (long long)T, (long long)bq,
                    (long long)bsq, mask, attn, total, flash, cudnn, best / total);
        std::fflush(stdout);
        csv << "prefill," << T << ",1," << bq << "," << bsq << "," << a.k << "," << a.b_k << "," << mask * 1e3 << ","
            << attn * 1e3 << "," << total * 1e3 << "," << flash * 1e3 << "," << cudnn * 1e3 << "," << best / total
            << "\n";
      }
    }
  }

  if (a.mode != "prefill") {
    std::printf("\ndecode (1 query per sequence, cached mask; b_q 32)\n%7s %6s %14s %14s %16s %16s\n", "T", "batch",
                "mask refresh us", "cached step us", "dense flash us", "dense cuDNN us");
    for (int64_t T : a.tokens) {
      for (int64_t B : a.batches) {
        const double bytes = static_cast<double>(B) * T * a.dim * 2 * 2 * a.kv_heads;
        const int sets = sets_for(bytes);
        std::vector<at::Tensor> q, k, v, out;
        for (int s = 0; s < sets; ++s) {
          q.push_back(at::randn({B, a.heads, 1, a.dim}, bf16));
          k.push_back(at::randn({B, a.kv_heads, T, a.dim}, bf16));
          v.push_back(at::randn({B, a.kv_heads, T, a.dim}, bf16));
          out.push_back(at::empty_like(q.back()));
        }
        hip::HipParams p;
        p.k = a.k, p.b_q = 32, p.b_k = a.b_k, p.sink = a.sink, p.window = a.window;
        std::vector<hip_torch::MaskTensors> m;
        for (int s = 0; s < sets; ++s) m.push_back(hip_torch::estimate_masks(q[s], k[s], p));
        const double mask = 1e3 * median_ms([&](int s) { hip_torch::estimate_masks_into(m[s], q[s], k[s], p); }, sets, a.repeats);
        const double step = 1e3 * median_ms(
            [&](int s) { hip_torch::sparse_attention(q[s], k[s], v[s], m[s].blocks, m[s].counts, p, {}, 0, out[s]); },
            sets, a.repeats);
        double flash = NAN, cudnn = NAN;
        if (dense) {
          flash = 1e3 * dense_ms(q, k, v, DenseBackend::kFlash, a.repeats, true);
          cudnn = 1e3 * dense_ms(q, k, v, DenseBackend::kCuDNN, a.repeats, true);
        }
        const double best = std::isnan(cudnn) ? flash : std::isnan(flash) ? cudnn : std::min(flash, cudnn);
        std::printf("%7lld %6lld %14.1f %14.1f %16.1f %16.1f\n", (long long)T, (long long)B, mask, step, flash, cudnn);
        std::fflush(stdout);
        csv << "decode," << T << "," << B << ",32,1," << a.k << "," << a.b_k << "," << mask << "," << step << ","
            << mask + step << "," << flash << "," << cudnn << "," << best / step << "\n";
      }
    }
  }
  captures::write_file_atomic(a.csv, csv.str());
  std::printf("\nCSV written to %s\n", a.csv.c_str());
}
#else
void run(const KernelBenchArgs&) { require_cuda_kernels("bench kernels"); }
#endif

}  // namespace

void register_kernel_bench(CLI::App& bench) {
  auto a = std::make_shared<KernelBenchArgs>();
  CLI::App* cmd = bench.add_subcommand("kernels", "CUDA HiP kernels vs dense attention (one Llama-3.1-8B layer)");
  add_number_list(*cmd, "--tokens", a->tokens, "sequence lengths T, comma-separated", int64_t{1}, int64_t{1} << 24);
  add_number_list(*cmd, "--batches", a->batches, "decode batch sizes, comma-separated", int64_t{1}, int64_t{4096});
  add_choice(*cmd, "--mode", a->mode, "prefill, decode or all", {"prefill", "decode", "all"});
  cmd->add_option("--prefill-blocks", a->prefill_blocks, "prefill b_q/b_sq pairs, comma-separated")
      ->delimiter(',')
      ->default_str("32/1,64/2");
  cmd->add_option("--csv", a->csv, "CSV output path")->capture_default_str();
  add_number(*cmd, "--repeats", a->repeats, "timed repeats at most (median)", 1, 100000);
  add_number(*cmd, "--heads", a->heads, "query heads", int64_t{1}, int64_t{1024});
  add_number(*cmd, "--kv-heads", a->kv_heads, "key/value heads", int64_t{1}, int64_t{1024});
  add_number(*cmd, "--dim", a->dim, "head dimension", int64_t{1}, int64_t{1024});
  // The synthetic layer's HiP sizes: this command's own spellings and help, the field table's ranges.
  const auto range_of = [](hip::HipField f) {
    const hip::HipParamField& d = hip::hip_param_field(f);
    return std::pair{static_cast<int64_t>(d.cli_lo), static_cast<int64_t>(d.cli_hi)};
  };
  const auto [k_lo, k_hi] = range_of(hip::HipField::kK);
  const auto [bk_lo, bk_hi] = range_of(hip::HipField::kBk);
  const auto [sink_lo, sink_hi] = range_of(hip::HipField::kSink);
  const auto [window_lo, window_hi] = range_of(hip::HipField::kWindow);
  add_number(*cmd, "--k", a->k, "HiP budget k (tokens)", k_lo, k_hi);
  add_number(*cmd, "--bk", a->b_k, "key block size b_k", bk_lo, bk_hi);
  add_number(*cmd, "--sink", a->sink, "sink tokens", sink_lo, sink_hi);
  add_number(*cmd, "--window", a->window, "dense window tokens", window_lo, window_hi);
  cmd->add_flag("--dense,!--no-dense", a->dense, "time the dense SDPA baseline")->capture_default_str();
  cmd->callback([a] { run(*a); });
}

}  // namespace hipstudio::app
