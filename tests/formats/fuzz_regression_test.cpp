// Inputs the libFuzzer targets (tests/fuzz) found crashing a parser, kept as unit tests so the fix
// stays. Each one must be refused with InputError (the CLI's "error: ...", the GUI's status line);
// any other exception type escaping means a crash for the user.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "engine/formats/errors.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio {
namespace {

using testing::TempDir;
using testing::write_bytes;

// A number outside double's range makes nlohmann::json throw out_of_range (406), not parse_error;
// the parsers used to let it escape (found by fuzz_hf_config and fuzz_safetensors_index).
const char* kOverflowingNumber = "1e999";

std::string safetensors_with_header(const std::string& header) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  return bytes + header;
}

TEST(FuzzRegression, ConfigJsonWithOverflowingNumberIsAnInputError) {
  const std::string text = std::string(R"({"architectures": ["LlamaForCausalLM"], "rope_theta": )") +
                           kOverflowingNumber + "}";
  EXPECT_THROW(parse_hf_config_text(text, "config.json"), InputError);
}

// fuzz_hf_config's round trip: a negative eos_token_id was accepted (and silently dropped when the
// config was written back), and one past int32 was truncated to another token.
TEST(FuzzRegression, ConfigJsonTokenIdsOutsideInt32AreRefusedNotMangled) {
  const std::string base = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000, "max_position_embeddings": 256, )";
  EXPECT_THROW(parse_hf_config_text(base + R"("eos_token_id": -51646})", "config.json"), InputError);
  EXPECT_THROW(parse_hf_config_text(base + R"("bos_token_id": 4294967298})", "config.json"), InputError);
  EXPECT_THROW(parse_hf_config_text(base + R"("eos_token_id": [18446744073709551615]})", "config.json"), InputError);
  EXPECT_EQ(parse_hf_config_text(base + R"("eos_token_id": -1})", "config.json").eos_id, -1);  // none
  EXPECT_EQ(parse_hf_config_text(base + R"("eos_token_id": [7, 8]})", "config.json").eos_id, 7);
}

TEST(FuzzRegression, SafetensorsHeaderWithOverflowingNumberIsAnInputError) {
  TempDir dir;
  write_bytes(dir.file("model.safetensors"),
              safetensors_with_header(std::string(R"({"__metadata__": {}, "x": )") + kOverflowingNumber + "}"));
  EXPECT_THROW(SafetensorsFile(dir.file("model.safetensors")), InputError);
}

TEST(FuzzRegression, SafetensorsIndexWithOverflowingNumberIsAnInputError) {
  TempDir dir;
  write_bytes(dir.file("model.safetensors.index.json"),
              std::string(R"({"metadata": {"total_size": )") + kOverflowingNumber + R"(}, "weight_map": {}})");
  EXPECT_THROW(SafetensorsModel(dir.path().string()), InputError);
}

TEST(FuzzRegression, TokenizerJsonWithOverflowingNumberIsAnInputError) {
  TempDir dir;
  write_bytes(dir.file("tokenizer.json"), std::string(R"({"version": )") + kOverflowingNumber + "}");
  EXPECT_THROW(load_hf_tokenizer(dir.path().string()), InputError);
}

TEST(FuzzRegression, TokenizerConfigWithOverflowingNumberIsAnInputError) {
  TempDir dir;
  write_bytes(dir.file("tokenizer.json"), R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
  ASSERT_NO_THROW(load_hf_tokenizer(dir.path().string()));  // the tokenizer itself is fine
  write_bytes(dir.file("tokenizer_config.json"), std::string(R"({"model_max_length": )") + kOverflowingNumber + "}");
  EXPECT_THROW(load_hf_tokenizer(dir.path().string()), InputError);
}

}  // namespace
}  // namespace hipstudio
