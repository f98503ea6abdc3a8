// llama2.c tokenizer.bin -> Hugging Face tokenizer.json + tokenizer_config.json, Llama-2 style.
// SentencePiece BPE ranks merges by the merged piece's score; HF ranks them by line number. Listing
// every way to build a piece from two pieces, ordered by that piece's score, makes the two agree.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "engine/formats/errors.h"
#include "engine/tokenizer/llama2c_vocab.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace hipstudio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kMetaspace = "\xE2\x96\x81";  // '▁'

std::string replace_spaces(const std::string& piece) {
  std::string out;
  for (char c : piece) {
    if (c == ' ') out += kMetaspace;
    else out.push_back(c);
  }
  return out;
}

// Writes `text` to path.tmp, then renames it over path, so readers never see half a file.
void write_atomically(const fs::path& path, const std::string& text) {
  const std::string tmp = path.string() + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (!file)
    throw InputError(tmp + ": cannot create (" + std::strerror(errno) + "); check the folder is writable");
  bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::remove(tmp.c_str());
    throw InputError(path.string() + ": cannot write (" + std::strerror(saved) + "); check free disk space and permissions");
  }
}

struct Merge {
  float score;     // of the merged piece
  size_t merged_bytes, left_bytes;
  int32_t merged;  // id of the merged piece
  std::string left, right;
};

// Order of HF ranks. Score first. Ties exist only among the runs of spaces (all scored -1e9); llama2.c
// resolves them leftmost-first, growing one run from the left, which HF reproduces when the merges
// that extend a longer run come before those that start a new one.
bool merges_before(const Merge& a, const Merge& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.merged_bytes != b.merged_bytes) return a.merged_bytes > b.merged_bytes;
  if (a.left_bytes != b.left_bytes) return a.left_bytes > b.left_bytes;
  return a.merged < b.merged;
}

}  // namespace

void write_hf_tokenizer_from_llama2c(const std::string& tokenizer_bin, int32_t vocab_size, const std::string& out_dir) {
  const Llama2cVocab vocab = read_llama2c_vocab(tokenizer_bin, vocab_size);
  if (!vocab.has_byte_tokens())
    throw InputError(tokenizer_bin + ": has " + std::to_string(vocab_size) +
                     " tokens, fewer than the 259 control and byte tokens a SentencePiece vocabulary starts with; "
                     "this tokenizer cannot be converted");

  // HF spelling of every piece: control tokens by name, bytes as <0xNN>, ' ' as '▁'.
  std::vector<std::string> pieces(static_cast<size_t>(vocab_size));
  pieces[kLlama2cUnk] = "<unk>";
  pieces[kLlama2cBos] = "<s>";
  pieces[kLlama2cEos] = "</s>";
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    pieces[kLlama2cFirstByte + b] = name;
  }
  std::unordered_map<std::string, int32_t> id_of;
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (id >= kLlama2cFirstPiece) {
      if (!utf8_is_valid(vocab.pieces[id]))
        throw InputError(tokenizer_bin + ": token " + std::to_string(id) +
                         " is not valid UTF-8, which tokenizer.json cannot hold; this tokenizer cannot be converted");
      pieces[id] = replace_spaces(vocab.pieces[id]);
    }
    if (!id_of.emplace(pieces[id], id).second)
      throw InputError(tokenizer_bin + ": tokens " + std::to_string(id_of[pieces[id]]) + " and " + std::to_string(id) +
                       " are both '" + utf8_display(pieces[id]) +
                       "'; tokenizer.json needs unique pieces, so this tokenizer cannot be converted");
  }

  std::vector<Merge> merges;
  for (int32_t id = kLlama2cFirstPiece; id < vocab_size; ++id) {
    const std::string& piece = pieces[id];
    for (size_t split = 0; split < piece.size();) {
      split += utf8_next(piece, split).length;  // split only between characters
      if (split >= piece.size()) break;
      const auto left = id_of.find(piece.substr(0, split)), right = id_of.find(piece.substr(split));
      if (left == id_of.end() || right == id_of.end() || left->second < kLlama2cFirstPiece ||
          right->second < kLlama2cFirstPiece)
        continue;  // byte and control tokens never merge
      merges.push_back({vocab.scores[id], piece.size(), split, id, left->first, right->first});
    }
  }
  std::sort(merges.begin(), merges.end(), merges_before);

  json model_vocab = json::object();
  for (int32_t id = 0; id < vocab_size; ++id) model_vocab[pieces[id]] = id;
  json merge_list = json::array();
  for (const Merge& merge : merges) merge_list.push_back(merge.left + " " + merge.right);  // pieces hold no ' '

  const auto special = [](int32_t id, const char* content) {
    return json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  const json bos_item = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  const json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", {special(kLlama2cUnk, "<unk>"), special(kLlama2cBos, "<s>"), special(kLlama2cEos, "</s>")}},
      {"normalizer", {{"type", "Sequence"},
                      {"normalizers", {{{"type", "Prepend"}, {"prepend", kMetaspace}},
                                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMetaspace}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {bos_item, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", {bos_item, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                  {{"SpecialToken", {{"id", "<s>"}, {"type_id", 1}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {kLlama2cBos}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", {{"type", "Sequence"},
                   {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", kMetaspace}}}, {"content", " "}},
                                 {{"type", "ByteFallback"}},
                                 {{"type", "Fuse"}},
                                 {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model", {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", "<unk>"},
                 {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr},
                 {"fuse_unk", true},
                 {"byte_fallback", true},
                 {"ignore_merges", false},
                 {"vocab", model_vocab},
                 {"merges", merge_list}}},
  };
  const json config = {
      {"add_bos_token", true},       {"add_eos_token", false},
      {"bos_token", "<s>"},          {"eos_token", "</s>"},
      {"unk_token", "<unk>"},        {"pad_token", nullptr},
      {"clean_up_tokenization_spaces", false},
      {"legacy", true},              {"tokenizer_class", "LlamaTokenizer"},
  };

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw InputError(out_dir + ": cannot create the folder (" + ec.message() + "); pick a writable output folder");
  write_atomically(fs::path(out_dir) / "tokenizer.json", tokenizer.dump(1) + "\n");
  write_atomically(fs::path(out_dir) / "tokenizer_config.json", config.dump(2) + "\n");
}

}  // namespace hipstudio
