#include "app/gui/capture_view.h"

#include <atomic>
#include <cstdio>

#include "captures/capture.h"

#include "engine/formats/errors.h"

namespace hipstudio::gui {

namespace {

std::string fmt_params(const char* format, long long a, long long b, long long c, long long d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

}  // namespace

namespace {

// The capture as the GUI shows it; `keep_masks`: its stored masks move into the analysis (B of a
// comparison draws them; A's views are recomputed from the inputs by the worker, as a live run's).
std::shared_ptr<const OpenCapture> capture_view(const std::string& path, bool keep_masks) {
  static std::atomic<uint64_t> next_id{1};
  captures::Capture c = captures::read_capture(path);
  PairedAnalysis& pa = c.analysis;
  if (keep_masks) {
    if (c.masks.empty()) throw InputError(path + ": the capture holds no masks (captured without the mask view), so it has nothing to compare");
    pa.masks = std::move(c.masks);
  }
  if (pa.inputs.empty())
    throw InputError(path + ": the capture holds no Q/K/V (written with --no-inputs), so the GUI cannot recompute its views; "
                     "use `hipstudio report` on it");
  auto out = std::make_shared<OpenCapture>();
  out->path = path;
  out->id = next_id++;

  auto view = std::make_shared<AnalysisView>();
  ModelInfo& m = view->model;
  m.display_name = c.info.run.model;
  m.architecture = c.info.run.architecture;
  m.device = c.info.run.device;
  const LayerInputs& in0 = pa.inputs[0];
  m.n_layers = static_cast<int64_t>(pa.layers.size());  // the views show the layers with stored inputs
  for (const LayerQuality& q : pa.layers) m.full_attention_layers += q.math.windowed() ? 0 : 1;
  m.n_heads = in0.heads;
  m.n_kv_heads = in0.kv_heads;
  m.head_dim = in0.dim;
  m.max_seq_len = static_cast<int64_t>(pa.prompt_ids.size() + pa.decode.size());
  m.element_bytes = c.info.dtype == "f32" || c.info.dtype.empty() ? 4 : 2;
  view->prompt = c.info.run.prompt;
  // The capture has token ids, not the tokenizer: the views show the pieces the writer stored
  // (captures::CaptureInfo), or "#id" for a capture without them.
  out->has_pieces = !c.info.prompt_pieces.empty() || pa.prompt_ids.empty();
  view->prompt_tokens = c.info.prompt_pieces;
  if (!out->has_pieces)
    for (int32_t id : pa.prompt_ids) view->prompt_tokens.push_back("#" + std::to_string(id));
  view->decode_dense_text = c.info.decode_dense_pieces;
  view->decode_hip_text = c.info.decode_hip_pieces;
  if (view->decode_dense_text.empty() && !pa.decode.empty())
    for (const auto& d : pa.decode) {
      view->decode_dense_text.push_back("#" + std::to_string(d.dense_token));
      view->decode_hip_text.push_back("#" + std::to_string(d.hip_token));
    }

  const AnalysisOptions& o = pa.options;
  HipKnobs& k = out->knobs;
  k.k = static_cast<int>(o.hip.hip.k);
  k.b_q = static_cast<int>(o.hip.hip.b_q);
  k.b_k = static_cast<int>(o.hip.hip.b_k);
  k.b_sq = static_cast<int>(o.hip.hip.b_sq);
  k.b_sk = static_cast<int>(o.hip.hip.b_sk);
  k.sink = static_cast<int>(o.hip.hip.sink);
  k.window = static_cast<int>(o.hip.hip.window);
  k.rho = static_cast<float>(o.hip.hip.rho);
  k.l_d = static_cast<int>(o.hip.dense_layers);
  k.r_m = static_cast<int>(o.hip.refresh_every);
  k.decode_steps = static_cast<int>(o.decode_steps);
  k.cache_factor = c.has_offload ? static_cast<float>(c.offload_config.cache_factor) : HipKnobs{}.cache_factor;

  out->banner = "Capture " + path + " (read-only): " + c.info.run.model + ", " + c.info.created + ", " + c.info.run.device;
  out->params.push_back(fmt_params("k %lld, b_q %lld, b_k %lld, b_sq %lld", k.k, k.b_q, k.b_k, k.b_sq));
  out->params.push_back(fmt_params("b_sk %lld, sink %lld, window %lld, l_d %lld", k.b_sk, k.sink, k.window, k.l_d));
  char buf[160];
  std::snprintf(buf, sizeof buf, "repr %.2f, r_m %d, decode steps %d, c %.2f, seed %llu", k.rho, k.r_m, k.decode_steps,
                k.cache_factor, static_cast<unsigned long long>(o.random_seed));
  out->params.push_back(buf);
  out->params.push_back("model " + c.info.run.model + " (" + c.info.run.architecture + "), dtype " + c.info.dtype +
                        (c.info.model_sha256.empty() ? "" : ", sha256 " + c.info.model_sha256.substr(0, 12) + "..."));
  out->params.push_back(std::to_string(pa.prompt_ids.size()) + " prompt tokens, written by hipstudio " +
                        c.info.run.tool_version + " on " + c.info.created);

  // The methods the capture holds (format 3 keys every one by name): the first is the side the
  // panels show; each one's numbers as the report's comparison table gives them.
  out->methods = c.method_names();
  for (const captures::CapturedMethod& cm : c.methods) {
    std::snprintf(buf, sizeof buf, "%s%s: ppl %.4f, KL %.5f, top-1 %.3f, recall %.3f", cm.choice.name.c_str(),
                  &cm == &c.methods.front() ? " (shown)" : "", cm.side.ppl, cm.kl, cm.top1_agreement,
                  captures::method_mean(cm, pa.layers, &HeadQuality::recall));
    out->params.push_back(buf);
  }

  view->analysis = std::make_shared<const PairedAnalysis>(std::move(pa));
  out->analysis = view;
  return out;
}

}  // namespace

std::shared_ptr<const OpenCapture> load_capture_view(const std::string& path) { return capture_view(path, false); }

std::shared_ptr<const CompareCapture> load_compare_capture(const std::string& path) {
  auto c = std::make_shared<CompareCapture>();
  c->view = capture_view(path, true);
  return c;
}

std::shared_ptr<const LayerMaskSnapshot> CompareCapture::masks(int64_t layer) const {
  const std::shared_ptr<const AnalysisView>& a = view->analysis;
  const LayerMaskViews* m = a->analysis->find_masks(layer);
  if (!m || !a->has_inputs(layer)) return nullptr;
  // Aliasing pointer: the views live as long as B's analysis.
  return std::make_shared<const LayerMaskSnapshot>(std::shared_ptr<const LayerMaskViews>(a->analysis, m), a);
}

}  // namespace hipstudio::gui
