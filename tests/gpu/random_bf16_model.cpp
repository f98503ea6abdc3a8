#include "tests/gpu/random_bf16_model.h"

#include <cmath>

#include <ATen/ATen.h>

#include "engine/model/model.h"

namespace hipstudio {

std::shared_ptr<const Model> random_bf16_model() {
  auto m = std::make_shared<Model>();
  ModelConfig& c = m->config;
  c.architecture = "LlamaForCausalLM";
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64;
  c.vocab_size = 512, c.max_seq_len = 4096;
  m->run = parse_run_device("cuda", "bf16");
  at::manual_seed(7);
  auto matrix = [&](int64_t rows, int64_t cols) { return at::randn({rows, cols}) / std::sqrt(static_cast<double>(cols)); };
  m->weights.embedding = at::randn({c.vocab_size, c.dim});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights w;
    w.attn_norm = at::rand({c.dim}).add(0.5);
    w.wqkv = matrix(c.q_dim() + 2 * c.kv_dim(), c.dim);
    w.wo = matrix(c.dim, c.q_dim());
    w.mlp_norm = at::rand({c.dim}).add(0.5);
    w.w13 = matrix(2 * c.hidden_dim, c.dim);
    w.w2 = matrix(c.dim, c.hidden_dim);
    m->weights.layers.push_back(w);
  }
  m->weights.final_norm = at::rand({c.dim}).add(0.5);
  m->weights.classifier = matrix(c.vocab_size, c.dim);
  place_weights(m->weights, m->run);  // as a loaded model's: bf16 matrices, float32 norms
  return m;
}

}  // namespace hipstudio
