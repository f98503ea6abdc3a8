// libFuzzer target: Hugging Face config.json (engine/formats/hf_config.h), from text.
// A config it accepts must pass validate_model_config again and survive the round trip through
// hf_config_json (what `hipstudio convert` writes) unchanged.
#include <string>

#include "engine/formats/hf_config.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const ModelConfig c = parse_hf_config_text(text, "config.json");
    validate_model_config(c, "config.json (again)");
    const ModelConfig back = parse_hf_config_text(hf_config_json(c, "float32"), "round trip");
    fuzz::require(back.dim == c.dim && back.hidden_dim == c.hidden_dim && back.n_layers == c.n_layers &&
                      back.n_heads == c.n_heads && back.n_kv_heads == c.n_kv_heads && back.head_dim == c.head_dim &&
                      back.vocab_size == c.vocab_size && back.max_seq_len == c.max_seq_len &&
                      back.bos_id == c.bos_id && back.eos_id == c.eos_id &&
                      back.tie_word_embeddings == c.tie_word_embeddings && back.rope == c.rope && back.layer_window == c.layer_window,
                  "config.json does not survive its own round trip");
  });
  return 0;
}
