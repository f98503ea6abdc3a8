#pragma once
// A Hugging Face tokenizer.json reduced to what encoding needs: added tokens, normalizer steps,
// pre-tokenizer steps and the BPE model. Parsed by hf_json.cpp, run by hf_tokenizer.cpp.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/decode_table.h"
#include "engine/tokenizer/pretokenize.h"

namespace hipstudio {

struct HfAddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false, rstrip = false;  // swallow whitespace to the left / right of the match
};

struct HfNormalizerStep {
  enum class Kind { Prepend, Replace, Identity } kind = Kind::Identity;
  std::string pattern, content;  // Replace: pattern -> content; Prepend: content
};

enum class PrependScheme { Always, First, Never };

struct HfPreTokenizerStep {
  enum class Kind { Split, ByteLevel, Metaspace } kind = Kind::Split;
  SplitRegex regex = SplitRegex::Gpt2;  // Split; ByteLevel when use_regex
  bool use_regex = false;               // ByteLevel: split with the GPT-2 regex first
  bool add_prefix_space = false;        // ByteLevel: prepend ' ' when the text does not start with one
  std::string replacement = "\xE2\x96\x81";  // Metaspace: '▁'
  PrependScheme prepend = PrependScheme::Always;  // Metaspace
  bool split = true;                    // Metaspace: a new word at every replacement char
};

struct HfBpeModel {
  std::unordered_map<std::string, int32_t> vocab;
  std::unordered_map<uint64_t, BpeMerge> merges;  // (left id << 32 | right id) -> rank, merged id
  int32_t unk = -1;
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word that is itself in the vocab is one token (Llama-3)
};

struct HfPipeline {
  std::vector<HfAddedToken> added;
  std::vector<HfNormalizerStep> normalizer;
  std::vector<HfPreTokenizerStep> pre_tokenizer;
  HfBpeModel model;
  DecodeTable decode;       // bos/eos filled by the loader
  bool add_bos = false;     // encode(text, true) prepends decode.bos
  int32_t template_bos = -1;  // the post-processor template's leading special token, if any
};

// Parses tokenizer.json text; `path` is only for error messages. Throws InputError.
HfPipeline parse_hf_tokenizer_json(const std::string& text, const std::string& path);

}  // namespace hipstudio
