#pragma once
// A kernels view over one layer's captured Q/K/V, so any view (masks, traces, oracle, score
// locality of any head) can be computed on demand from a PairedAnalysis without copying.
#include "engine/analysis/paired_result.h"
#include "kernels/attention_inputs.h"

namespace hipstudio {

// Valid while `layer` lives. Positions are implicit (the prompt: query i at position i). Inputs kept
// on a device are copied to the host on the first call (LayerInputs::host).
inline hip::AttentionInputs layer_view(const LayerInputs& layer) {
  const LayerInputArrays& a = layer.host();
  hip::AttentionInputs in;
  in.q = a.q.data();
  in.k = a.k.data();
  in.v = a.v.empty() ? nullptr : a.v.data();
  in.hq = layer.heads;
  in.hkv = layer.kv_heads;
  in.tq = layer.tokens;
  in.tk = layer.tokens;
  in.d = layer.dim;
  return in;
}

}  // namespace hipstudio
