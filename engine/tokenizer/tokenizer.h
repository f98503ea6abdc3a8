#pragma once
// Text <-> token ids for the engine: llama2.c's tokenizer.bin and Hugging Face tokenizer.json (BPE,
// byte-level or SentencePiece style). Loaders throw InputError naming the file, the problem and the fix.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hipstudio {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // add_bos: "this text starts a sequence". BOS is prepended when add_bos is true and the tokenizer
  // has a BOS that its model expects (llama2.c: always; HF: tokenizer_config.json's add_bos_token or
  // the post-processor template; GPT-2 and Qwen2 add none).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos) const = 0;
  // Decodes a whole sequence to bytes. BOS and EOS give no text; sentencepiece's dummy-prefix space is
  // removed from the first token and from a token right after BOS (as llama2.c and HF do). Ids outside
  // the vocabulary give no text. Byte-level and byte-fallback tokens are emitted as raw bytes, so the
  // result may end inside a UTF-8 character; in exchange decode(ids[0..m]) is always a byte prefix of
  // decode(ids[0..n]) for m <= n, and streaming can print the difference after holding back an
  // unfinished character (utf8_complete_prefix in engine/tokenizer/utf8.h).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // Readable piece for display, always valid UTF-8: "<0x0A>" -> "\n", " Once" stays " Once", a lone
  // non-ASCII byte shows as "<0xE4>", special tokens as their text ("<s>", "<|endoftext|>").
  virtual std::string token_text(int32_t id) const = 0;
  virtual int32_t bos_id() const = 0;   // -1 when none
  virtual int32_t eos_id() const = 0;   // -1 when none
  virtual int32_t vocab_size() const = 0;
};

// llama2.c tokenizer.bin: int32 max_token_length, then vocab_size x {float score, int32 len, bytes}.
// Encoding follows llama2.c's run.c: dummy prefix " " (when text non-empty), UTF-8 code points looked
// up, unknown ones as byte-fallback tokens (id = byte + 3), then repeatedly merge the adjacent pair
// whose merged string has the highest score (leftmost on ties). BOS = 1, EOS = 2. As in SentencePiece,
// control (ids 0-2) and byte tokens (ids 3-258) are never looked up by text and never merged.
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::string& path, int32_t vocab_size);

// Hugging Face tokenizer.json with model.type "BPE"; dir_or_tokenizer_json is a model folder or the
// file itself. BOS/EOS come from tokenizer_config.json beside it when it names them, else from
// bos_id/eos_id (config.json's ids, passed by the caller), else from the post-processor template and
// the added tokens' usual names.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& dir_or_tokenizer_json,
                                             std::optional<int32_t> bos_id = std::nullopt,
                                             std::optional<int32_t> eos_id = std::nullopt);

// For `hipstudio convert`: writes tokenizer.json (SentencePiece-style BPE with byte fallback, merges
// derived from the vocabulary) and tokenizer_config.json into out_dir (created if missing), so that
// load_hf_tokenizer(out_dir) encodes and decodes exactly as load_llama2c_tokenizer does. Atomic writes.
void write_hf_tokenizer_from_llama2c(const std::string& tokenizer_bin, int32_t vocab_size, const std::string& out_dir);

}  // namespace hipstudio
