#pragma once
// `hipstudio convert --to hf`: writes a loaded model as a Hugging Face directory
//   config.json, model.safetensors (weights in the requested dtype, HF tensor names and RoPE layout),
//   tokenizer.json + tokenizer_config.json (for llama2.c sources, derived from tokenizer.bin, which is
//   copied alongside; for HF sources, the original tokenizer files are copied).
// The directory is built under a temporary name and renamed into place at the end, so a failure
// never leaves a half-written model; an existing non-empty directory is never overwritten.
#include <string>

#include <c10/core/ScalarType.h>

#include "engine/model/model.h"

namespace hipstudio {

void convert_to_hf(const Model& model, c10::ScalarType dtype, const std::string& out_dir);

}  // namespace hipstudio
