#pragma once
// A small Llama-shaped model with random bf16 weights on CUDA whose heads the few-search mask kernel
// serves (head_dim 64), so that HiP's refresh steps can run inside decode graphs. Shared by
// the gpu tests of decode graphs, batch 1 and batched.
#include <memory>

#include "engine/model/model.h"

namespace hipstudio {

std::shared_ptr<const Model> random_bf16_model();

}  // namespace hipstudio
