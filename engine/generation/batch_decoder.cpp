#include "engine/generation/batch_decoder.h"

#include <algorithm>

namespace hipstudio {

BatchDecoder::BatchDecoder(const Transformer& transformer, BatchKVStorage* storage)
    : transformer_(transformer), storage_(storage) {}

BatchDecoder::~BatchDecoder() = default;

bool BatchDecoder::uses_graphs(const Transformer::LayerTimer& timer) const {
  return graphs_ && !timer && storage_ && transformer_.model().run.device.is_cuda() && BatchDecodeGraph::supported();
}

void BatchDecoder::prepare(const std::vector<BatchSequence>& sequences) {
  if (!uses_graphs({}) || sequences.empty()) return;
  for (const BatchSequence& s : sequences)
    if (!s.cache || !s.attention || s.cache->length() + 1 > std::min(s.cache->capacity(), transformer_.max_positions()))
      return;  // the eager step refuses it with its message
  if (graph_ && graph_->serves(*storage_, sequences)) return;
  graph_.reset();  // releases the previous set's graphs before capturing for this one
  graph_ = std::make_unique<BatchDecodeGraph>(transformer_, *storage_, sequences);
}

at::Tensor BatchDecoder::step(const std::vector<int32_t>& tokens, const std::vector<BatchSequence>& sequences,
                              const Transformer::LayerTimer& timer) {
  last_ = GraphedStep::kNone;
  if (uses_graphs(timer)) {
    prepare(sequences);
    if (graph_ && graph_->serves(*storage_, sequences)) {
      at::Tensor logits = graph_->step(tokens, sequences);
      if (logits.defined()) {
        last_ = graph_->last_step();
        ++graphed_steps_;
        return logits;
      }
    }
  }
  return decode_batch(transformer_, tokens, sequences, timer, storage_);
}

}  // namespace hipstudio
