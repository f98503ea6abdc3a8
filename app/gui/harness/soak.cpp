// The soak script (soak.h): self-test steps that loop through a long session's actions and check
// every result against the first uncancelled run of the same parameters.
#include "app/gui/harness/soak.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "app/gui/app_state.h"
#include "app/gui/capture_view.h"
#include "app/gui/files.h"
#include "app/gui/process_stats.h"
#include "app/gui/save_export.h"
#include "app/gui/harness/self_test.h"
#include "app/gui/harness/soak_growth.h"
#include "app/gui/worker.h"
#include "engine/formats/errors.h"

namespace hipstudio::gui {

SoakLimit parse_soak_limit(const std::string& value) {
  SoakLimit limit;
  limit.text = value;
  const auto bad = [&] {
    return InputError("--soak " + value + " is neither a duration nor a loop count: pass e.g. 30m, 90s, 2h, 1h30m or 25");
  };
  if (value.empty()) throw bad();
  if (value.find_first_not_of("0123456789") == std::string::npos) {
    if (value.size() > 6 || std::stol(value) < 1) throw bad();
    limit.loops = static_cast<int>(std::stol(value));
    return limit;
  }
  size_t i = 0;
  while (i < value.size()) {  // number-unit pairs: h, m, s
    const size_t digits = value.find_first_not_of("0123456789", i);
    if (digits == i || digits == std::string::npos || digits - i > 6) throw bad();
    const double n = std::stod(value.substr(i, digits - i));
    const char unit = value[digits];
    if (unit == 'h') limit.seconds += 3600 * n;
    else if (unit == 'm') limit.seconds += 60 * n;
    else if (unit == 's') limit.seconds += n;
    else throw bad();
    i = digits + 1;
  }
  if (!(limit.seconds > 0)) throw bad();
  return limit;
}

namespace {

using Clock = std::chrono::steady_clock;

const char* const kMore = kSelfTestMore;
constexpr double kCancelBoundS = 5.0;  // a cancel must leave the worker idle within this

// Every stage but generation and the sweep (which run only when asked) is up to date for the request.
bool views_fresh(const Snapshot& s) {
  for (int st = 0; st < kStageCount; ++st)
    if (!stage_on_request(st) && !s.fresh(st)) return false;
  return s.analysis && s.masks && s.trace && s.dense && s.locality && s.offload;
}

std::string mmss(double seconds) {
  const long s = std::lround(seconds);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  return buf;
}

// What a complete run of one parameter set gives: compared exactly on every later run.
struct Reference {
  double dense_ppl = 0, hip_ppl = 0, kl = 0, top1 = 0;
  std::vector<int32_t> hip_generated;
  int64_t layer = 0;
  std::vector<int32_t> blocks, counts;
};

Reference reference_of(const Snapshot& s) {
  const PairedAnalysis& a = *s.analysis->analysis;
  return {a.dense.ppl, a.hip.ppl, a.kl, a.top1_agreement, a.hip.generated, s.masks->layer, s.masks->hip.blocks, s.masks->hip.counts};
}

}  // namespace

struct Soak::State {
  State(const SoakLimit& l, const Worker& w, std::vector<std::unique_ptr<Panel>>& p) : limit(l), worker(w), panels(p) {}
  SoakLimit limit;
  const Worker& worker;
  std::vector<std::unique_ptr<Panel>>& panels;
  uint64_t seed = 0;
  std::mt19937_64 rng;
  std::vector<HipKnobs> sets;  // the parameter sets the loops move between
  int current = 0;             // the set the live run has
  std::map<int, Reference> refs;
  std::string dense_text;              // greedy dense continuation (independent of HiP's parameters)
  std::map<int, std::string> hip_text; // per set
  double analysis_s = 1, generate_s = 1;  // how long an uncancelled run takes (the cancel delays' range)
  // Generate button presses: each a new id, and back to 0 (nothing asked) after the step, so the
  // parameter changes of the next steps do not re-run the generation too (it keeps loops short).
  uint64_t generate_id = 1000;
  int thread_baseline = 0;                // after the warm-up run and generation
  std::string dir;                        // temporary folder for exports and captures
  Clock::time_point start = Clock::now();
  int loop = 0;
  double first_rss = 0, last_rss = 0, first_anon = 0, last_anon = 0;  // MiB
  std::vector<double> loop_rss;  // MiB at each loop's end
  int first_threads = 0, last_threads = 0;
  // Cancel statistics
  int cancels = 0, cancelled_analyses = 0, cancelled_generations = 0;
  double worst_idle_s = 0;
  // Scratch of the step running now
  int phase = 0, target = 0, next = 0;
  Clock::time_point mark, cancel_at;
  double delay_s = 0;
  std::string landed;  // what the worker was doing when the cancel was sent
  std::shared_ptr<const ModelInfo> model_before;
  std::shared_ptr<const GenerateView> generate_before;
  std::shared_ptr<const AnalysisView> live_analysis;
  std::shared_ptr<const LayerMaskSnapshot> live_masks;

  double since(Clock::time_point t) const { return std::chrono::duration<double>(Clock::now() - t).count(); }

  // The worker's snapshot once it has served the latest request (null while it works). Read from
  // the worker, not the frame's snapshot: one taken before the worker went idle would do.
  std::shared_ptr<const Snapshot> settled() const {
    if (!worker.idle()) return nullptr;
    auto s = worker.snapshot();
    return s->busy ? nullptr : s;
  }

  // The soak set a view's parameters are; with prefill_only, the first set whose prefill parameters
  // they are (a layer view reads the prompt's results only, which r_m and decode steps never change).
  int set_of(const AnalysisView& a, bool prefill_only = false) const {
    const AnalysisOptions& o = a.analysis->options;
    for (size_t i = 0; i < sets.size(); ++i) {
      const HipKnobs& k = sets[i];
      const hip::HipParams p = to_hip_params(k);
      const hip::HipParams& h = o.hip.hip;
      if (p.k == h.k && p.b_q == h.b_q && p.b_k == h.b_k && p.b_sq == h.b_sq && p.b_sk == h.b_sk && p.sink == h.sink &&
          p.window == h.window && p.rho == h.rho && k.l_d == o.hip.dense_layers &&
          (prefill_only || (k.r_m == o.hip.refresh_every && k.decode_steps == o.decode_steps)))
        return static_cast<int>(i);
    }
    return -1;
  }

  int other_set(int not_this) {
    std::uniform_int_distribution<int> pick(0, static_cast<int>(sets.size()) - 1);
    int i = pick(rng);
    while (i == not_this) i = pick(rng);
    return i;
  }

  // The first complete run of a set is its reference; every later one must equal it exactly.
  std::string compare_or_store(int set, const Snapshot& s) {
    if (set < 0) return "the run's parameters are none of the soak's sets";
    const Reference now = reference_of(s);
    auto it = refs.find(set);
    if (it == refs.end()) {
      refs[set] = now;
      return "";
    }
    const Reference& r = it->second;
    if (now.dense_ppl != r.dense_ppl || now.hip_ppl != r.hip_ppl || now.kl != r.kl || now.top1 != r.top1 ||
        now.hip_generated != r.hip_generated)
      return "set " + std::to_string(set) + ": perplexity / KL / top-1 / decoded tokens differ from the set's first run";
    if (now.layer == r.layer && (now.blocks != r.blocks || now.counts != r.counts))
      return "set " + std::to_string(set) + ": the HiP mask differs from the set's first run";
    return "";
  }

  // After a cancel: only complete results on screen, agreeing with each other.
  std::string inconsistency(const Snapshot& s) const {
    for (int st = 0; st < kStageCount; ++st) {
      if (!s.error[st].empty() && s.error[st] != "cancelled") return std::string(stage_name(st)) + " failed: " + s.error[st];
      if (s.error[st] == "cancelled" && !s.stale[st]) return std::string(stage_name(st)) + " says cancelled but not stale";
    }
    if (!s.analysis || !s.masks) return "the previous results were dropped";
    // A cancel during the decode half after a new prefill leaves that prefill's results (complete,
    // with no decode steps) on screen: they match a set's prompt results, not its steps.
    const bool prompt_only = s.analysis->prompt_only();
    if (prompt_only && !s.stale[kStageDecode]) return "a prompt-only analysis passes for a fresh decode";
    // A cancel while the HiP layers above the viewed one run leaves the prefill's partial results
    // (the viewed layer's, no metrics yet): complete for what they show, and marked as waiting.
    const bool partial = s.analysis->analysis->hip_partial();
    if (partial && !s.stale[kStageHipRest]) return "a partial prefill passes for a whole one";
    const int a_set = set_of(*s.analysis, prompt_only);
    if (a_set < 0) return "the analysis on screen has parameters of no complete run";
    if (auto it = refs.find(a_set); it != refs.end()) {
      const PairedAnalysis& a = *s.analysis->analysis;
      if ((!partial && (a.dense.ppl != it->second.dense_ppl || a.hip.ppl != it->second.hip_ppl)) ||
          (!prompt_only && a.hip.generated != it->second.hip_generated))
        return "the analysis on screen differs from its set's complete run";
    }
    if (!s.stale[kStageMasks] && s.masks->source->prefill_identity() != s.analysis->prefill_identity())
      return "fresh masks of another analysis";
    const int m_set = set_of(*s.masks->source, true);
    if (auto it = refs.find(m_set); it != refs.end() && it->second.layer == s.masks->layer)
      if (it->second.blocks != s.masks->hip.blocks || it->second.counts != s.masks->hip.counts)
        return "the masks on screen differ from their set's complete run";
    if (s.trace && !s.stale[kStageTrace]) {
      const int32_t* row = s.masks->hip.row(s.trace->head, s.trace->query_block);
      if (s.trace->params.k != s.masks->params.k ||
          s.trace->engine_blocks != std::vector<int32_t>(row, row + s.masks->hip.count(s.trace->head, s.trace->query_block)))
        return "a fresh trace disagrees with the masks";
    }
    if (s.generate && s.generate->running) return "a generation view says running while the worker is idle";
    return "";
  }

  // The thread count back at the baseline (a file task's thread may take a moment to exit).
  std::string threads_back() const {
    const int n = thread_count_settled(thread_baseline, 2.0);
    if (n == thread_baseline) return "";
    return "the process has " + std::to_string(n) + " threads, the baseline is " + std::to_string(thread_baseline);
  }
};

Soak::Soak(const SoakLimit& limit, const Worker& worker, std::vector<std::unique_ptr<Panel>>& panels)
    : st_(std::make_shared<State>(limit, worker, panels)) {
  State& st = *st_;
  // glibc raises its mmap threshold after large frees (up to 32 MiB), after which a freed 23 MiB
  // logits buffer may stay resident at the top of the worker thread's arena, where malloc_trim does
  // not reach: RSS then flips by that much from loop to loop with nothing leaked. A fixed threshold
  // sends every large buffer back to the system when freed, so RSS follows what the process holds.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  const char* env = std::getenv("HIPSTUDIO_SOAK_SEED");
  // Not std::random_device: it crashes in processes linked with PyTorch's LibTorch wheels.
  const auto clock_seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^ (static_cast<uint64_t>(getpid()) << 32);
  st.seed = env && *env ? std::strtoull(env, nullptr, 10) : clock_seed % 1000000007ULL;
  st.rng.seed(st.seed);
  st.dir = (std::filesystem::temp_directory_path() / ("hipstudio-soak-" + std::to_string(getpid()))).string();
  // Parameter sets for stories15M's ~190-token prompt: the defaults first (what the app opens with),
  // then other k, b_q, b_k, l_d, r_m, sink and window.
  HipKnobs d;
  d.decode_steps = 4;  // fewer than the app's 16: each loop runs about six analyses
  auto with = [&](int k, int bq, int bk, int sink, int window, int ld, int rm) {
    HipKnobs h = d;
    h.k = k, h.b_q = bq, h.b_k = bk, h.sink = sink, h.window = window, h.l_d = ld, h.r_m = rm;
    return h;
  };
  st.sets = {d, with(16, 8, 2, 2, 4, 1, 4), with(32, 16, 4, 4, 8, 2, 2), with(16, 4, 1, 0, 0, 0, 1), with(64, 8, 4, 4, 16, 1, 8)};
  std::printf("soak: %s, seed %llu (HIPSTUDIO_SOAK_SEED=%llu replays the random choices), %zu parameter sets, temp folder %s\n",
              limit.text.c_str(), static_cast<unsigned long long>(st.seed), static_cast<unsigned long long>(st.seed),
              st.sets.size(), st.dir.c_str());
}

Soak::~Soak() {
  std::error_code ec;
  std::filesystem::remove_all(st_->dir, ec);
}

std::vector<SelfTestStep> Soak::setup_steps() {
  auto st = st_;
  std::vector<SelfTestStep> steps;
  steps.push_back({"soak: the default model and its first run", [st](AppState& s) {
                     s.knobs = s.applied = st->sets[0];
                   },
                   [st](const AppState&, const Snapshot&) {
                     auto s = st->settled();
                     return s && (views_fresh(*s) || !s->error[kStageModel].empty() || !s->error[kStageAnalysis].empty());
                   },
                   [st](AppState&, const Snapshot&) -> std::string {
                     auto s = st->settled();
                     for (const HipKnobs& set : st->sets)
                       if (std::string rule = validate_knobs(set, s->model ? s->model->full_attention_layers : 0); !rule.empty())
                         return "a soak parameter set is invalid: " + rule;
                     if (!s->error[kStageModel].empty()) return "the model did not load: " + s->error[kStageModel];
                     if (!s->error[kStageAnalysis].empty()) return "the analysis failed: " + s->error[kStageAnalysis];
                     st->analysis_s = s->analysis->seconds();
                     st->current = 0;
                     return st->compare_or_store(st->set_of(*s->analysis), *s);
                   },
                   300, 2, true});
  steps.push_back({"soak: a warm-up generation",
                   [st](AppState& s) {
                     s.generate_tokens = 6;
                     s.generate_id = ++st->generate_id;
                     st->mark = Clock::now();
                   },
                   [st](const AppState& s, const Snapshot&) {
                     auto n = st->settled();
                     return n && n->generate && n->generate->id == s.generate_id &&
                            (n->fresh(kStageGenerate) || !n->error[kStageGenerate].empty());
                   },
                   [st](AppState& app, const Snapshot&) -> std::string {
                     auto s = st->settled();
                     if (!s->error[kStageGenerate].empty()) return "generation failed: " + s->error[kStageGenerate];
                     st->generate_s = st->since(st->mark);
                     st->dense_text = s->generate->dense_text;
                     st->hip_text[st->current] = s->generate->hip_text;
                     if (st->dense_text.empty() || s->generate->hip_text.empty()) return "a side generated nothing";
                     app.generate_id = 0;
                     st->thread_baseline = thread_count();
                     std::printf("soak: one analysis takes %.2f s, one generation %.2f s; %d threads after this warm-up "
                                 "(GL, LibTorch and BLAS pools included): the baseline after each cancel\n",
                                 st->analysis_s, st->generate_s, st->thread_baseline);
                     return "";
                   },
                   300, 2, true});
  return steps;
}

std::vector<SelfTestStep> Soak::loop_steps() {
  auto st = st_;
  std::vector<SelfTestStep> steps;
  // Export and save run as a file task: the first pass starts it (start: "" or why it was
  // refused), a pass after it has settled checks what it wrote (verify: "" or what is wrong).
  auto file_task_step = [st](std::string name, std::function<void(AppState&)> clear_result,
                             std::function<std::string(AppState&)> start,
                             std::function<std::string(AppState&)> verify, double timeout_s) -> SelfTestStep {
    return {std::move(name),
            [st, clear_result](AppState& s) {
              st->phase = 0;
              clear_result(s);
            },
            [st](const AppState& s, const Snapshot&) { return !s.file_task && st->settled() != nullptr; },
            [st, start, verify](AppState& s, const Snapshot&) -> std::string {
              if (st->phase == 1) return verify(s);
              const std::string refused = start(s);
              if (!refused.empty()) return refused;
              st->phase = 1;
              return kMore;
            },
            timeout_s, 2};
  };
  // 1. Reload the same model from disk: every stage re-runs and must give the same numbers.
  steps.push_back({"soak: reload the model",
                   [st](AppState& s) {
                     st->model_before = st->worker.snapshot()->model;
                     ++s.model_reload;
                   },
                   [st](const AppState&, const Snapshot&) {
                     auto s = st->settled();
                     return s && s->model != st->model_before && views_fresh(*s);
                   },
                   [st](AppState&, const Snapshot&) -> std::string {
                     auto s = st->settled();
                     return st->compare_or_store(st->set_of(*s->analysis), *s);
                   }});
  // 2. New HiP parameters (k, b_q, b_k, sink, window, l_d, r_m).
  steps.push_back({"soak: new HiP parameters",
                   [st](AppState& s) {
                     st->target = st->other_set(st->current);
                     s.knobs = st->sets[static_cast<size_t>(st->target)];
                   },
                   [st](const AppState&, const Snapshot&) {
                     auto s = st->settled();
                     return s && views_fresh(*s) && st->set_of(*s->analysis) == st->target;
                   },
                   [st](AppState&, const Snapshot&) -> std::string {
                     st->current = st->target;
                     return st->compare_or_store(st->current, *st->settled());
                   }});
  // 3. An invalid combination is refused and never reaches the worker.
  steps.push_back({"soak: an invalid combination is refused",
                   [](AppState& s) { s.knobs.b_k = 3; },
                   [](const AppState& s, const Snapshot&) { return !s.invalid.empty(); },
                   [st](AppState& s, const Snapshot&) -> std::string {
                     auto n = st->settled();
                     if (!n) return kMore;
                     s.knobs = st->sets[static_cast<size_t>(st->current)];
                     if (!views_fresh(*n) || st->set_of(*n->analysis) != st->current) return "an invalid combination reached the worker";
                     return "";
                   },
                   60, 2});
  // 4. Cancel analyses at random moments (new parameters, then Esc after a random delay), check
  // the worker and the snapshot, then run other parameters to completion.
  for (int c = 0; c < 2; ++c) {
    steps.push_back({"soak: cancel an analysis at a random moment",
                     [st](AppState& s) {
                       st->phase = 0;
                       st->target = st->other_set(st->current);
                       s.knobs = st->sets[static_cast<size_t>(st->target)];
                       std::uniform_real_distribution<double> delay(0, 1.2 * st->analysis_s);
                       st->delay_s = delay(st->rng);
                       st->mark = Clock::now();
                     },
                     [](const AppState&, const Snapshot&) { return true; },
                     [st](AppState& s, const Snapshot&) -> std::string {
                       switch (st->phase) {
                         case 0: {
                           if (st->since(st->mark) < st->delay_s) return kMore;
                           s.cancel_requested = true;  // what the Cancel button and Esc do
                           st->cancel_at = Clock::now();
                           const auto now = st->worker.snapshot();
                           st->landed = now->busy ? std::string(stage_name(now->running_stage)) + ": " + now->what : "idle";
                           st->phase = 1;
                           return kMore;
                         }
                         case 1: {
                           auto n = st->settled();
                           if (!n) {
                             if (st->since(st->cancel_at) > kCancelBoundS) return "the worker was not idle 5 s after the cancel";
                             return kMore;
                           }
                           const double idle_s = st->since(st->cancel_at);
                           st->worst_idle_s = std::max(st->worst_idle_s, idle_s);
                           ++st->cancels;
                           const bool run_cancelled =
                               n->error[kStageAnalysis] == "cancelled" || n->error[kStageHipRest] == "cancelled" ||
                               n->error[kStageDecode] == "cancelled";
                           if (run_cancelled) ++st->cancelled_analyses;
                           std::printf("soak:   cancel after %.0f ms (at %s): idle %.0f ms later, %s\n", st->delay_s * 1e3,
                                       st->landed.c_str(), idle_s * 1e3,
                                       run_cancelled ? "analysis cancelled" : "the run had finished");
                           if (std::string t = st->threads_back(); !t.empty()) return t;
                           if (std::string bad = st->inconsistency(*n); !bad.empty()) return bad;
                           // The next run: other parameters (a changed request runs the cancelled
                           // stages again) run to completion and equal their reference.
                           st->next = st->other_set(st->target);
                           s.knobs = st->sets[static_cast<size_t>(st->next)];
                           st->phase = 2;
                           return kMore;
                         }
                         default: {
                           auto n = st->settled();
                           if (!n || !views_fresh(*n) || st->set_of(*n->analysis) != st->next) return kMore;
                           st->current = st->next;
                           return st->compare_or_store(st->current, *n);
                         }
                       }
                     },
                     180, 1});
  }
  // 5. Cancel a generation at a random moment: the previous complete generation stays on screen.
  steps.push_back({"soak: cancel a generation at a random moment",
                   [st](AppState& s) {
                     st->phase = 0;
                     st->generate_before = st->worker.snapshot()->generate;
                     s.generate_id = ++st->generate_id;
                     std::uniform_real_distribution<double> delay(0, 1.2 * st->generate_s);
                     st->delay_s = delay(st->rng);
                     st->mark = Clock::now();
                   },
                   [](const AppState&, const Snapshot&) { return true; },
                   [st](AppState& s, const Snapshot&) -> std::string {
                     if (st->phase == 0) {
                       if (st->since(st->mark) < st->delay_s) return kMore;
                       s.cancel_requested = true;
                       st->cancel_at = Clock::now();
                       st->phase = 1;
                       return kMore;
                     }
                     auto n = st->settled();
                     if (!n) {
                       if (st->since(st->cancel_at) > kCancelBoundS) return "the worker was not idle 5 s after the cancel";
                       return kMore;
                     }
                     const double idle_s = st->since(st->cancel_at);
                     st->worst_idle_s = std::max(st->worst_idle_s, idle_s);
                     ++st->cancels;
                     const bool cancelled = n->error[kStageGenerate] == "cancelled";
                     if (cancelled) ++st->cancelled_generations;
                     std::printf("soak:   cancel after %.0f ms: idle %.0f ms later, %s\n", st->delay_s * 1e3, idle_s * 1e3,
                                 cancelled ? "generation cancelled" : "the generation had finished");
                     if (std::string t = st->threads_back(); !t.empty()) return t;
                     if (std::string bad = st->inconsistency(*n); !bad.empty()) return bad;
                     const uint64_t id = s.generate_id;
                     s.generate_id = 0;
                     if (cancelled) {
                       if (n->generate != st->generate_before) return "a cancelled generation did not put the previous one back";
                     } else if (!n->generate || n->generate->id != id || n->generate->dense_text != st->dense_text) {
                       return "the finished generation is not the complete one";
                     }
                     return "";
                   },
                   120, 1});
  // 6. Generate to the end: the dense side always continues the same way, HiP's as its set did.
  steps.push_back({"soak: generate",
                   [st](AppState& s) { s.generate_id = ++st->generate_id; },
                   [st](const AppState& s, const Snapshot&) {
                     auto n = st->settled();
                     return n && n->generate && n->generate->id == s.generate_id && n->fresh(kStageGenerate);
                   },
                   [st](AppState& s, const Snapshot&) -> std::string {
                     auto n = st->settled();
                     s.generate_id = 0;
                     if (n->generate->dense_text != st->dense_text) return "the dense continuation changed";
                     auto it = st->hip_text.find(st->current);
                     if (it == st->hip_text.end()) st->hip_text[st->current] = n->generate->hip_text;
                     else if (it->second != n->generate->hip_text) return "the HiP continuation differs from its set's first";
                     return "";
                   },
                   180, 2});
  // 7. Export the view into the temporary folder.
  steps.push_back(file_task_step(
      "soak: export the view", [](AppState& s) { s.last_exported.clear(); },
      [st](AppState& s) -> std::string {
        ExportOptions o;
        o.dir = st->dir + "/export";
        o.px = 256;
        return start_export_view(s, *st->settled(), o) ? "" : "export refused: " + s.status_message;
      },
      [](AppState& s) -> std::string {
        if (s.last_exported.empty()) return "the export failed: " + s.status_message;
        for (const std::string& p : s.last_exported) {
          const std::string bytes = read_file_bytes(p);
          const std::string ext = std::filesystem::path(p).extension().string();
          if (!(ext == ".png" && is_png_bytes(bytes)) && !(ext == ".svg" && is_svg_text(bytes)) &&
              !(ext == ".csv" && bytes.rfind("layer,head", 0) == 0))
            return "not a valid export: " + p;
        }
        return "";
      },
      120));
  // 8. Save the live run as a capture, 9. reopen it (views equal the live ones), 10. close it.
  steps.push_back(file_task_step(
      "soak: save a capture", [](AppState& s) { s.status_message.clear(); },
      [st](AppState& s) -> std::string {
        auto n = st->settled();
        st->live_analysis = n->analysis;
        st->live_masks = n->masks;
        std::filesystem::create_directories(st->dir);
        return start_save_capture(s, *n, open_capture_views(st->panels, s), st->dir + "/run.hipcap")
                   ? ""
                   : "save refused: " + s.status_message;
      },
      [st](AppState& s) -> std::string {
        return saved_ok(s, st->dir + "/run.hipcap") ? "" : "the save failed: " + s.status_message;
      },
      240));
  steps.push_back({"soak: reopen the capture",
                   [st](AppState& s) {
                     if (!open_capture_file(s, st->dir + "/run.hipcap")) std::printf("soak:   %s\n", s.status_message.c_str());
                   },
                   [st](const AppState& s, const Snapshot&) {
                     auto n = st->settled();
                     return !s.capture || (n && n->analysis == s.capture->analysis && n->masks && n->masks->source == n->analysis &&
                                           n->fresh(kStageMasks));
                   },
                   [st](AppState& s, const Snapshot&) -> std::string {
                     if (!s.capture) return "the saved capture did not open: " + s.status_message;
                     auto n = st->settled();
                     const PairedAnalysis& x = *st->live_analysis->analysis;
                     const PairedAnalysis& y = *n->analysis->analysis;
                     if (x.dense.ppl != y.dense.ppl || x.hip.ppl != y.hip.ppl || x.kl != y.kl) return "the capture's numbers differ from the live run";
                     if (n->masks->layer != st->live_masks->layer || n->masks->hip.blocks != st->live_masks->hip.blocks ||
                         n->masks->hip.counts != st->live_masks->hip.counts)
                       return "the capture's masks differ from the live ones";
                     return "";
                   },
                   120, 2});
  steps.push_back({"soak: close the capture",
                   [](AppState& s) { close_capture(s); },
                   [st](const AppState& s, const Snapshot&) {
                     auto n = st->settled();
                     return !s.capture && n && views_fresh(*n) && n->analysis != st->live_analysis;
                   },
                   [st](AppState&, const Snapshot&) -> std::string {
                     auto n = st->settled();
                     std::error_code ec;
                     std::filesystem::remove_all(st->dir, ec);
                     st->live_analysis.reset();
                     st->live_masks.reset();
                     st->generate_before.reset();
                     return st->compare_or_store(st->current, *n);
                   },
                   180, 2});
  return steps;
}

bool Soak::end_loop(bool failed) {
  State& st = *st_;
  ++st.loop;
  // Freed memory glibc keeps in its arenas is not a leak: return it to the system before
  // measuring, so the figure follows what the process holds.
  malloc_trim(0);
  st.last_rss = resident_mib();
  st.loop_rss.push_back(st.last_rss);
  st.last_anon = status_mib("RssAnon");
  st.last_threads = thread_count();
  if (st.loop == 1) st.first_rss = st.last_rss, st.first_anon = st.last_anon, st.first_threads = st.last_threads;
  std::printf("soak: loop %d, RSS %.1f MiB (anonymous %.1f, file %.1f, shared %.1f), threads %d, elapsed %s\n", st.loop, st.last_rss,
              st.last_anon, status_mib("RssFile"), status_mib("RssShmem"), st.last_threads, mmss(st.since(st.start)).c_str());
  std::fflush(stdout);
  if (failed) return false;
  if (st.limit.loops > 0) return st.loop < st.limit.loops;
  return st.since(st.start) < st.limit.seconds;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

int Soak::finish() {
  State& st = *st_;
  const double pct = st.first_rss > 0 ? 100.0 * (st.last_rss - st.first_rss) / st.first_rss : 0.0;
  std::printf("soak: %d cancels (%d analyses and %d generations interrupted, the others had finished), idle within %.0f ms at worst\n",
              st.cancels, st.cancelled_analyses, st.cancelled_generations, st.worst_idle_s * 1e3);
  // Growth is what the last loops all keep (soak_growth.h).
  const double grew = persisting_rss_growth(st.loop_rss);
  std::printf("soak: %d loops in %s, RSS first-loop %.1f MiB -> end %.1f MiB (%+.1f%%; the last loops keep %+.1f MiB), threads %d -> %d "
              "(anonymous memory %.1f -> %.1f MiB)\n",
              st.loop, mmss(st.since(st.start)).c_str(), st.first_rss, st.last_rss, pct, grew, st.first_threads, st.last_threads,
              st.first_anon, st.last_anon);
  int failures = 0;
  const double allowed = soak_rss_allowance(st.first_rss);
  if (kAddressSanitizer) {
    // AddressSanitizer keeps freed memory in its quarantine (up to 256 MiB), so RSS measures the
    // quarantine, not the program; its leak checker at exit does this check's job in that build.
    std::printf("soak: RSS check skipped under AddressSanitizer (LeakSanitizer checks at exit)\n");
  } else if (soak_rss_grew(st.loop_rss)) {
    std::printf("soak: FAIL resident memory grew %.1f MiB, kept by the last loops (allowed %.1f MiB)\n", grew, allowed);
    ++failures;
  }
  if (st.last_threads > st.first_threads) {
    std::printf("soak: FAIL the thread count grew from %d to %d\n", st.first_threads, st.last_threads);
    ++failures;
  }
  std::fflush(stdout);
  return failures;
}

}  // namespace hipstudio::gui
