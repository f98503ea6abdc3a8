// llama2.c's tokenizer (run.c's encode/decode) over a tokenizer.bin vocabulary.
#include <string>
#include <unordered_map>

#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/decode_table.h"
#include "engine/tokenizer/llama2c_vocab.h"
#include "engine/tokenizer/utf8.h"

namespace hipstudio {
namespace {

DecodeTable llama2c_decode_table(const Llama2cVocab& vocab) {
  DecodeTable table;
  const auto n = static_cast<int32_t>(vocab.pieces.size());
  for (int32_t id = 0; id < n; ++id) {
    std::string bytes = vocab.pieces[id];
    std::string display;
    if (vocab.has_byte_tokens() && id >= kLlama2cFirstByte && id < kLlama2cFirstPiece) {
      // Byte tokens are stored as "<0xNN>", as the raw byte, or as its Latin-1 code point in UTF-8
      // depending on the exporter; the id alone says which byte it is.
      bytes = std::string(1, static_cast<char>(id - kLlama2cFirstByte));
    } else if (id == kLlama2cBos || id == kLlama2cEos) {
      display = id == kLlama2cBos ? "<s>" : "</s>";  // stored as "\n<s>\n" for run.c's printing
    }
    table.display.push_back(display.empty() ? utf8_display(bytes) : display);
    table.bytes.push_back(std::move(bytes));
  }
  table.strip_dummy_prefix = true;
  table.bos = n > kLlama2cBos ? kLlama2cBos : -1;
  table.eos = n > kLlama2cEos ? kLlama2cEos : -1;
  return table;
}

class Llama2cTokenizer final : public TableTokenizer {
 public:
  explicit Llama2cTokenizer(Llama2cVocab vocab)
      : TableTokenizer(llama2c_decode_table(vocab)), vocab_(std::move(vocab)) {
    // Lowest id wins when a piece appears twice (SentencePiece vocabularies have no duplicates).
    for (auto id = static_cast<int32_t>(vocab_.pieces.size()) - 1; id >= vocab_.first_piece(); --id)
      lookup_[vocab_.pieces[id]] = id;
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override {
    std::vector<int32_t> symbols;
    if (!text.empty()) push_piece(" ", symbols);  // SentencePiece's dummy prefix
    // Split into UTF-8 code points exactly as run.c does: a lead byte plus up to 3 continuation bytes.
    for (size_t pos = 0; pos < text.size();) {
      size_t length = 1;
      while (pos + length < text.size() && length < 4 && (static_cast<unsigned char>(text[pos + length]) & 0xC0) == 0x80)
        ++length;
      push_piece(text.substr(pos, length), symbols);
      pos += length;
    }
    std::string pair;
    const auto merge = [&](int32_t left, int32_t right) -> std::optional<BpeMerge> {
      if (left < vocab_.first_piece() || right < vocab_.first_piece()) return std::nullopt;  // bytes never merge
      pair.assign(vocab_.pieces[left]).append(vocab_.pieces[right]);
      const auto it = lookup_.find(pair);
      if (it == lookup_.end()) return std::nullopt;
      return BpeMerge{-static_cast<double>(vocab_.scores[it->second]), it->second};
    };
    std::vector<int32_t> ids;
    if (add_bos && table_.bos >= 0) ids.push_back(table_.bos);
    const std::vector<int32_t> merged = bpe_merge(symbols, merge);
    ids.insert(ids.end(), merged.begin(), merged.end());
    return ids;
  }

 private:
  // A code point's piece, or its bytes as byte-fallback tokens (or <unk> without byte tokens).
  void push_piece(std::string_view piece, std::vector<int32_t>& out) const {
    const auto it = lookup_.find(std::string(piece));
    if (it != lookup_.end()) {
      out.push_back(it->second);
    } else if (vocab_.has_byte_tokens()) {
      for (char c : piece) out.push_back(kLlama2cFirstByte + static_cast<unsigned char>(c));
    } else {
      out.push_back(kLlama2cUnk);
    }
  }

  Llama2cVocab vocab_;
  std::unordered_map<std::string, int32_t> lookup_;  // piece -> id, ordinary pieces only
};

}  // namespace

std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::string& path, int32_t vocab_size) {
  return std::make_unique<Llama2cTokenizer>(read_llama2c_vocab(path, vocab_size));
}

}  // namespace hipstudio
