#pragma once
// A kernels view over one layer's captured Q/K/V, so any view (masks, traces, oracle, score
// locality of any head) can be computed on demand from a PairedAnalysis without copying.
#include "engine/analysis/paired_result.h"
#include "kernels/attention_inputs.h"

namespace hipstudio {

// Valid while `layer` lives. Positions are implicit (the prompt: query i at position i).
inline hip::AttentionInputs layer_view(const LayerInputs& layer) {
  hip::AttentionInputs in;
  in.q = layer.q.data();
  in.k = layer.k.data();
  in.v = layer.v.empty() ? nullptr : layer.v.data();
  in.hq = layer.heads;
  in.hkv = layer.kv_heads;
  in.tq = layer.tokens;
  in.tk = layer.tokens;
  in.d = layer.dim;
  return in;
}

}  // namespace hipstudio
