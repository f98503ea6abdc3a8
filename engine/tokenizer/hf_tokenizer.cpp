// Hugging Face BPE tokenizers: added tokens, normalizer, pre-tokenizer, BPE, as tokenizers does it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/formats/errors.h"
#include "engine/tokenizer/hf_pipeline.h"
#include "engine/tokenizer/utf8.h"

namespace hipstudio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string replace_all(std::string text, const std::string& pattern, const std::string& content) {
  if (pattern.empty()) return text;
  for (size_t pos = 0; (pos = text.find(pattern, pos)) != std::string::npos; pos += content.size())
    text.replace(pos, pattern.size(), content);
  return text;
}

class HfTokenizer final : public TableTokenizer {
 public:
  explicit HfTokenizer(HfPipeline pipeline) : TableTokenizer(std::move(pipeline.decode)), p_(std::move(pipeline)) {
    for (size_t i = 0; i < p_.added.size(); ++i)
      if (!p_.added[i].content.empty())
        added_by_first_byte_[static_cast<unsigned char>(p_.added[i].content[0])].push_back(i);
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override {
    std::vector<int32_t> ids;
    if (add_bos && p_.add_bos && table_.bos >= 0) ids.push_back(table_.bos);
    // Added tokens are cut out of the raw text first (leftmost, then longest); the text between
    // them is normalized and tokenized segment by segment.
    size_t segment_start = 0;
    for (size_t pos = 0; pos < text.size();) {
      const HfAddedToken* match = nullptr;
      for (size_t i : added_by_first_byte_[static_cast<unsigned char>(text[pos])]) {
        const HfAddedToken& token = p_.added[i];
        if (text.compare(pos, token.content.size(), token.content) == 0 &&
            (!match || token.content.size() > match->content.size()))
          match = &token;
      }
      if (!match) {
        ++pos;
        continue;
      }
      size_t segment_end = pos;
      if (match->lstrip)
        while (segment_end > segment_start && is_ascii_space(text[segment_end - 1])) --segment_end;
      encode_segment(text.substr(segment_start, segment_end - segment_start), segment_start == 0, ids);
      ids.push_back(match->id);
      pos += match->content.size();
      if (match->rstrip)
        while (pos < text.size() && is_ascii_space(text[pos])) ++pos;
      segment_start = pos;
    }
    encode_segment(text.substr(segment_start), segment_start == 0, ids);
    return ids;
  }

 private:
  void encode_segment(std::string_view segment, bool at_text_start, std::vector<int32_t>& ids) const {
    if (segment.empty()) return;
    std::string normalized(segment);
    for (const HfNormalizerStep& step : p_.normalizer) {
      if (step.kind == HfNormalizerStep::Kind::Prepend) normalized = step.content + normalized;
      if (step.kind == HfNormalizerStep::Kind::Replace) normalized = replace_all(normalized, step.pattern, step.content);
    }
    std::vector<std::string> words{normalized};
    for (const HfPreTokenizerStep& step : p_.pre_tokenizer) {
      std::vector<std::string> next;
      for (size_t w = 0; w < words.size(); ++w) pre_tokenize(step, words[w], at_text_start && w == 0, next);
      words = std::move(next);
    }
    for (const std::string& word : words) encode_word(word, ids);
  }

  static void pre_tokenize(const HfPreTokenizerStep& step, std::string word, bool first, std::vector<std::string>& out) {
    switch (step.kind) {
      case HfPreTokenizerStep::Kind::Split:
        for (std::string_view piece : split_with_regex(word, step.regex)) out.emplace_back(piece);
        return;
      case HfPreTokenizerStep::Kind::ByteLevel:
        if (step.add_prefix_space && word.compare(0, 1, " ") != 0) word.insert(0, " ");
        if (!step.use_regex) {
          out.push_back(byte_level_encode(word));
          return;
        }
        for (std::string_view piece : split_with_regex(word, SplitRegex::Gpt2)) out.push_back(byte_level_encode(piece));
        return;
      case HfPreTokenizerStep::Kind::Metaspace: {
        word = replace_all(word, " ", step.replacement);
        const bool prepend = step.prepend == PrependScheme::Always || (step.prepend == PrependScheme::First && first);
        if (prepend && word.compare(0, step.replacement.size(), step.replacement) != 0) word.insert(0, step.replacement);
        if (!step.split) {
          out.push_back(word);
          return;
        }
        // Each replacement char starts a new word (HF's MergedWithNext).
        size_t start = 0;
        for (size_t pos = word.find(step.replacement, 1); pos != std::string::npos;
             pos = word.find(step.replacement, pos + 1)) {
          out.push_back(word.substr(start, pos - start));
          start = pos;
        }
        out.push_back(word.substr(start));
        return;
      }
    }
  }

  void encode_word(const std::string& word, std::vector<int32_t>& ids) const {
    if (word.empty()) return;
    const HfBpeModel& model = p_.model;
    if (model.ignore_merges) {
      const auto it = model.vocab.find(word);
      if (it != model.vocab.end()) {
        ids.push_back(it->second);
        return;
      }
    }
    std::vector<int32_t> symbols;
    bool last_was_unk = false;
    for (size_t pos = 0; pos < word.size();) {
      const Utf8Char c = utf8_next(word, pos);
      const std::string piece = word.substr(pos, c.length);
      pos += c.length;
      const auto it = model.vocab.find(piece);
      if (it != model.vocab.end()) {
        symbols.push_back(it->second);
        last_was_unk = false;
        continue;
      }
      if (model.byte_fallback && byte_fallback(piece, symbols)) {
        last_was_unk = false;
        continue;
      }
      if (model.unk >= 0 && !(model.fuse_unk && last_was_unk)) symbols.push_back(model.unk);
      last_was_unk = true;
    }
    const auto merge = [&](int32_t left, int32_t right) -> std::optional<BpeMerge> {
      const auto it = model.merges.find((static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right));
      if (it == model.merges.end()) return std::nullopt;
      return it->second;
    };
    const std::vector<int32_t> merged = bpe_merge(symbols, merge);
    ids.insert(ids.end(), merged.begin(), merged.end());
  }

  // Appends <0xNN> tokens for every byte of `piece`; false (nothing appended) when one is missing.
  bool byte_fallback(const std::string& piece, std::vector<int32_t>& symbols) const {
    std::vector<int32_t> bytes;
    for (char c : piece) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned>(static_cast<unsigned char>(c)));
      const auto it = p_.model.vocab.find(name);
      if (it == p_.model.vocab.end()) return false;
      bytes.push_back(it->second);
    }
    symbols.insert(symbols.end(), bytes.begin(), bytes.end());
    return true;
  }

  HfPipeline p_;
  std::vector<size_t> added_by_first_byte_[256];  // indices into p_.added, by first byte of content
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open; check the path and permissions");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The id of a token named in tokenizer_config.json: added tokens first, then the vocab.
std::optional<int32_t> token_id(const HfPipeline& p, const std::string& name) {
  for (const HfAddedToken& token : p.added)
    if (token.content == name) return token.id;
  const auto it = p.model.vocab.find(name);
  if (it != p.model.vocab.end()) return it->second;
  return std::nullopt;
}

// tokenizer_config.json spells a token as "<s>", {"content": "<s>", ...} or null (none).
std::optional<std::optional<int32_t>> config_token(const HfPipeline& p, const json& config, const char* key,
                                                   const std::string& config_path) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;  // not said
  const json& value = config[key];
  if (value.is_null()) return std::optional<int32_t>();  // said: none
  const std::string name = value.is_string() ? value.get<std::string>()
                           : value.is_object() && value.contains("content") && value["content"].is_string()
                               ? value["content"].get<std::string>()
                               : std::string();
  const std::optional<int32_t> id = token_id(p, name);
  if (!id)
    throw InputError(config_path + ": " + key + " " + value.dump() +
                     " is not a token of tokenizer.json; the two files come from different models");
  return id;
}

int32_t guess_token(const HfPipeline& p, std::initializer_list<const char*> names) {
  for (const char* name : names)
    for (const HfAddedToken& token : p.added)
      if (token.content == name) return token.id;
  return -1;
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& dir_or_tokenizer_json, std::optional<int32_t> bos_id,
                                             std::optional<int32_t> eos_id) {
  std::error_code ec;
  fs::path json_path(dir_or_tokenizer_json);
  if (fs::is_directory(json_path, ec)) json_path /= "tokenizer.json";
  if (!fs::is_regular_file(json_path, ec))
    throw InputError(json_path.string() + ": no such file; Hugging Face models need tokenizer.json "
                     "(a folder with only tokenizer.model is not supported: convert it with transformers first)");
  HfPipeline pipeline = parse_hf_tokenizer_json(read_text(json_path.string()), json_path.string());

  json config;
  const fs::path config_path = json_path.parent_path() / "tokenizer_config.json";
  if (fs::is_regular_file(config_path, ec)) {
    try {
      config = json::parse(read_text(config_path.string()));
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
      throw InputError(config_path.string() + ": is not valid JSON (" + e.what() + "); re-download it or delete it");
    }
  }
  const auto vocab_size = static_cast<int32_t>(pipeline.decode.bytes.size());
  for (const auto& [given, name] : {std::pair{bos_id, "bos_token_id"}, std::pair{eos_id, "eos_token_id"}})
    if (given && (*given < 0 || *given >= vocab_size))
      throw InputError(json_path.string() + ": config.json's " + name + " " + std::to_string(*given) +
                       " is outside the tokenizer's " + std::to_string(vocab_size) +
                       " tokens; the config and tokenizer.json come from different models");

  const auto said_bos = config_token(pipeline, config, "bos_token", config_path.string());
  const auto said_eos = config_token(pipeline, config, "eos_token", config_path.string());
  const int32_t template_bos = pipeline.template_bos;
  if (template_bos >= vocab_size)  // a post_processor naming an id the vocabulary lacks
    throw InputError(json_path.string() + ": the post_processor's template adds token id " + std::to_string(template_bos) +
                     " but the vocabulary has only " + std::to_string(vocab_size) +
                     " tokens (added_tokens missing?); re-download tokenizer.json");
  pipeline.decode.bos = said_bos ? said_bos->value_or(-1)
                        : bos_id ? *bos_id
                        : template_bos >= 0 ? template_bos
                                            : guess_token(pipeline, {"<s>", "<|begin_of_text|>", "<|startoftext|>"});
  pipeline.decode.eos = said_eos ? said_eos->value_or(-1)
                        : eos_id ? *eos_id
                                 : guess_token(pipeline, {"</s>", "<|end_of_text|>", "<|endoftext|>", "<|im_end|>"});
  if (config.is_object() && config.contains("add_bos_token") && config["add_bos_token"].is_boolean())
    pipeline.add_bos = config["add_bos_token"].get<bool>();
  else
    pipeline.add_bos = template_bos >= 0;
  return std::make_unique<HfTokenizer>(std::move(pipeline));
}

}  // namespace hipstudio
