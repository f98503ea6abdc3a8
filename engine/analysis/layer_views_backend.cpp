#include "engine/analysis/layer_views_backend.h"

#include <stdexcept>

#include <ATen/ATen.h>

#include "engine/analysis/host_inputs.h"
#include "engine/views/reference_views.h"

namespace hipstudio {

namespace {

// The reference needs the whole layer: it keeps the queries of every chunk (host float32) and
// computes once the last chunk, whose keys/values cover the prompt, arrives.
class ReferenceLayerViews final : public LayerViewsBackend {
 public:
  explicit ReferenceLayerViews(const LayerViewsSetup& setup) : setup_(setup) {}
  std::string name() const override { return "float64 CPU reference"; }

  void add_chunk(const LayerViewsChunk& chunk) override {
    if (chunk.first_row != rows_) throw std::logic_error("layer views: chunks must come in row order");
    queries_.push_back(chunk.q.to(at::kCPU, at::kFloat));
    rows_ += chunk.q.size(1);
    if (rows_ < setup_.prompt_tokens) return;
    // The last chunk's keys/values cover the prompt: compute now and let the copies go.
    if (setup_.math.windowed() && !setup_.keep_masks) {  // no HiP run to measure, no masks asked for
      result_.quality = unmeasured_layer_quality(setup_.layer, chunk.q.size(0), setup_.math);
      queries_.clear();
      return;
    }
    const HostAttentionInputs host(at::cat(queries_, 1), chunk.k, chunk.v);
    queries_.clear();
    result_.masks = reference_layer_masks(host.view, setup_.params, setup_.math, setup_.seed, setup_.layer,
                                          /*threads=*/0, /*with_oracle=*/true, setup_.method);
    result_.quality = reference_layer_quality(host.view, result_.masks, /*threads=*/0, setup_.random_scores);
    result_.has_masks = setup_.keep_masks;
    if (!result_.has_masks) result_.masks = LayerMaskViews{};
  }

  LayerViewsResult finish() override {
    if (rows_ != setup_.prompt_tokens) throw std::logic_error("layer views: the chunks do not cover the prompt");
    return std::move(result_);
  }

 private:
  LayerViewsSetup setup_;
  std::vector<at::Tensor> queries_;
  int64_t rows_ = 0;
  LayerViewsResult result_;
};

}  // namespace

std::unique_ptr<LayerViewsBackend> make_reference_layer_views(const LayerViewsSetup& setup) {
  return std::make_unique<ReferenceLayerViews>(setup);
}

std::unique_ptr<LayerViewsBackend> make_layer_views(const c10::Device& device, const LayerViewsSetup& setup) {
  return device.is_cuda() ? make_tensor_layer_views(setup) : make_reference_layer_views(setup);
}

LayerViewsResult compute_layer_views(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const LayerViewsSetup& setup, bool use_reference) {
  std::unique_ptr<LayerViewsBackend> views =
      use_reference ? make_reference_layer_views(setup) : make_tensor_layer_views(setup);
  LayerViewsChunk chunk;
  chunk.q = q;
  chunk.k = k;
  chunk.v = v;
  views->add_chunk(chunk);
  return views->finish();
}

}  // namespace hipstudio
