#include "engine/tokenizer/tokenizer_file.h"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "engine/formats/errors.h"

namespace hipstudio {

TokenizerFileFormat detect_tokenizer_format(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return TokenizerFileFormat::HfJson;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("tokenizer file '" + path + "' cannot be opened; check the path and its permissions");
  // A file named *.json is read as JSON whatever it holds: a damaged or empty tokenizer.json is then
  // told it is not valid JSON, never to use llama2.c's tokenizer.bin.
  const std::string name = std::filesystem::path(path).filename().string();
  if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".json") == 0) return TokenizerFileFormat::HfJson;
  char c = 0;
  // A tokenizer.bin starts with max_token_length as a little-endian int32, whose first byte is never
  // '{' for a sane length (123 would be; the llama2.c loader still refuses lengths it cannot use).
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  return in && c == '{' ? TokenizerFileFormat::HfJson : TokenizerFileFormat::Llama2cBin;
}

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path, int32_t vocab_size, std::optional<int32_t> bos_id,
                                               std::optional<int32_t> eos_id) {
  if (detect_tokenizer_format(path) == TokenizerFileFormat::HfJson) return load_hf_tokenizer(path, bos_id, eos_id);
  return load_llama2c_tokenizer(path, vocab_size);
}

}  // namespace hipstudio
