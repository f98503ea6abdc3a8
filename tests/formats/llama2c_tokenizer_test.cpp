// llama2.c tokenizer on stories15M's tokenizer.bin: known ids, a literal port of run.c's O(n^2)
// merge loop as the reference, round trips, streaming prefix stability and corrupt files.
#include <gtest/gtest.h>

#include <cstring>
#include <unordered_map>

#include "engine/formats/errors.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/formats/sample_texts.h"
#include "tests/formats/stories15m.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio {
namespace {

using testing::kStories15mVocab;
using testing::stories15m_tokenizer_path;

// run.c's encode, written as plainly as run.c (scan every pair each round), over its own parse of
// the file. As in SentencePiece, ids 0-258 (control, bytes) are not looked up by text or merged.
class RunCReference {
 public:
  explicit RunCReference(const std::string& path) {
    const std::string data = testing::read_bytes(path);
    size_t pos = 4;
    for (int i = 0; i < kStories15mVocab; ++i) {
      float score;
      int32_t length;
      std::memcpy(&score, data.data() + pos, 4);
      std::memcpy(&length, data.data() + pos + 4, 4);
      vocab_.push_back(data.substr(pos + 8, static_cast<size_t>(length)));
      scores_.push_back(score);
      pos += 8 + static_cast<size_t>(length);
      if (i >= 259) lookup_.emplace(vocab_.back(), i);
    }
  }

  std::vector<int32_t> encode(const std::string& text, bool bos) const {
    std::vector<int32_t> tokens;
    if (bos) tokens.push_back(1);
    const size_t first = tokens.size();
    if (!text.empty()) tokens.push_back(lookup_.at(" "));
    std::string buffer;
    for (size_t c = 0; c < text.size(); ++c) {
      if ((text[c] & 0xC0) != 0x80) buffer.clear();
      buffer.push_back(text[c]);
      if (c + 1 < text.size() && (text[c + 1] & 0xC0) == 0x80 && buffer.size() < 4) continue;
      const auto it = lookup_.find(buffer);
      if (it != lookup_.end()) {
        tokens.push_back(it->second);
      } else {
        for (char b : buffer) tokens.push_back(static_cast<unsigned char>(b) + 3);
      }
      buffer.clear();
    }
    while (true) {
      float best_score = -1e10f;
      int best_id = -1;
      size_t best_idx = 0;
      for (size_t i = first; i + 1 < tokens.size(); ++i) {
        if (tokens[i] < 259 || tokens[i + 1] < 259) continue;
        const auto it = lookup_.find(vocab_[tokens[i]] + vocab_[tokens[i + 1]]);
        if (it != lookup_.end() && scores_[it->second] > best_score) {
          best_score = scores_[it->second];
          best_id = it->second;
          best_idx = i;
        }
      }
      if (best_id == -1) break;
      tokens[best_idx] = best_id;
      tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best_idx) + 1);
    }
    return tokens;
  }

 private:
  std::vector<std::string> vocab_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int32_t> lookup_;
};

using testing::random_texts;

class Llama2cTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HIPSTUDIO_REQUIRE_STORIES15M_TOKENIZER();
    tokenizer_ = load_llama2c_tokenizer(stories15m_tokenizer_path(), kStories15mVocab);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(Llama2cTokenizerTest, KnownIds) {
  // Checked against a separate Python port of run.c; the pieces below show why each id is right.
  EXPECT_EQ(tokenizer_->encode("Once upon a time", true), (std::vector<int32_t>{1, 9038, 2501, 263, 931}));
  EXPECT_EQ(tokenizer_->token_text(9038), " Once");
  EXPECT_EQ(tokenizer_->token_text(931), " time");
  // '\n' is no piece in Llama's vocabulary: byte fallback 0x0A + 3 = 13.
  EXPECT_EQ(tokenizer_->encode("a\nb", true), (std::vector<int32_t>{1, 263, 13, 29890}));
  EXPECT_EQ(tokenizer_->token_text(13), "\n");
  // 😀 = F0 9F 98 80 is no piece: four byte tokens (byte + 3), after the dummy prefix "▁" (29871).
  EXPECT_EQ(tokenizer_->encode("I love 😀!", true),
            (std::vector<int32_t>{1, 306, 5360, 29871, 0xF0 + 3, 0x9F + 3, 0x98 + 3, 0x80 + 3, 29991}));
  EXPECT_EQ(tokenizer_->token_text(0xF0 + 3), "<0xF0>");
  // CJK characters that are pieces; the dummy prefix cannot merge with them and stays alone.
  EXPECT_EQ(tokenizer_->encode("中文", false), (std::vector<int32_t>{29871, 30275, 30333}));
  EXPECT_EQ(tokenizer_->token_text(30275), "中");
  // Runs of spaces are pieces scored -1e9: merged last, leftmost first ("    " is 268).
  EXPECT_EQ(tokenizer_->encode("    x", true), (std::vector<int32_t>{1, 268, 921}));
  EXPECT_EQ(tokenizer_->token_text(268), "    ");
  EXPECT_EQ(tokenizer_->encode("", true), std::vector<int32_t>{1});
  EXPECT_EQ(tokenizer_->encode("", false), std::vector<int32_t>{});
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_EQ(tokenizer_->vocab_size(), 32000);
  EXPECT_EQ(tokenizer_->token_text(1), "<s>");
  EXPECT_EQ(tokenizer_->token_text(2), "</s>");
}

TEST_F(Llama2cTokenizerTest, MatchesRunCReference) {
  const RunCReference reference(stories15m_tokenizer_path());
  std::vector<std::string> texts = testing::sample_texts();
  for (const std::string& text : random_texts(300, 1)) texts.push_back(text);
  for (const std::string& text : texts)
    for (bool bos : {true, false}) ASSERT_EQ(tokenizer_->encode(text, bos), reference.encode(text, bos)) << text;
}

TEST_F(Llama2cTokenizerTest, RoundTripAndStreaming) {
  std::vector<std::string> texts = testing::sample_texts();
  for (const std::string& text : random_texts(100, 2)) texts.push_back(text);
  for (const std::string& text : texts) {
    const std::vector<int32_t> ids = tokenizer_->encode(text, true);
    const std::string decoded = tokenizer_->decode(ids);
    ASSERT_EQ(decoded, text);
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, false)), text);  // dummy prefix dropped at the start
    // Every prefix of the ids decodes to a prefix of the text, so streaming can print differences.
    for (size_t m = 0; m <= ids.size(); ++m) {
      const std::string partial = tokenizer_->decode(std::vector<int32_t>(ids.begin(), ids.begin() + m));
      ASSERT_EQ(decoded.compare(0, partial.size(), partial), 0) << text << " m=" << m;
      ASSERT_TRUE(utf8_is_valid(partial.substr(0, utf8_complete_prefix(partial))));
    }
  }
  // After an EOS and a new BOS the dummy prefix is removed again; out-of-vocabulary ids give no text.
  EXPECT_EQ(tokenizer_->decode({1, 9038, 2, 1, 9038, 40000, -1}), "OnceOnce");
  EXPECT_EQ(tokenizer_->decode({2501, 263}), "upon a");  // no BOS: the first token still loses its prefix
}

// A tiny well-formed tokenizer.bin: max_token_length 4 and `n` tokens of one byte each.
std::string tiny_tokenizer(int n) {
  std::string out(4, '\0');
  const int32_t max_length = 4;
  std::memcpy(out.data(), &max_length, 4);
  for (int i = 0; i < n; ++i) {
    char record[9];
    const float score = static_cast<float>(-i);
    const int32_t length = 1;
    std::memcpy(record, &score, 4);
    std::memcpy(record + 4, &length, 4);
    record[8] = static_cast<char>('a' + i % 26);
    out.append(record, 9);
  }
  return out;
}

void expect_load_error(const std::string& path, int32_t vocab_size, const std::string& problem) {
  try {
    load_llama2c_tokenizer(path, vocab_size);
    ADD_FAILURE() << "no error; expected: " << problem;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Llama2cTokenizerFile, CorruptFiles) {
  testing::TempDir dir;
  const std::string path = dir.file("tokenizer.bin");
  testing::write_bytes(path, tiny_tokenizer(5));
  EXPECT_NO_THROW(load_llama2c_tokenizer(path, 5));
  expect_load_error(path, 6, "ends inside token 5");           // vocab_size larger than the file
  expect_load_error(path, 3, "holds more than the 3 tokens");  // vocab_size smaller than the file
  expect_load_error(path, 3, "(it holds 5)");
  expect_load_error(path, 0, "not positive");
  expect_load_error(dir.file("missing.bin"), 5, "cannot open");

  std::string bytes = tiny_tokenizer(5);
  testing::write_bytes(path, bytes.substr(0, 2));
  expect_load_error(path, 5, "too short");
  testing::write_bytes(path, bytes.substr(0, bytes.size() - 1));  // last token's byte missing
  expect_load_error(path, 5, "ends inside the bytes of token 4");
  std::string negative = bytes;
  const int32_t minus_one = -1;
  std::memcpy(negative.data() + 4 + 9 * 2 + 4, &minus_one, 4);  // token 2's length
  testing::write_bytes(path, negative);
  expect_load_error(path, 5, "token 2 has length -1");
  std::string absurd = bytes;
  const int32_t huge = 1 << 30;
  std::memcpy(absurd.data(), &huge, 4);
  testing::write_bytes(path, absurd);
  expect_load_error(path, 5, "max_token_length");
  std::string too_long = bytes;
  const int32_t five = 5;  // longer than max_token_length 4
  std::memcpy(too_long.data() + 4 + 4, &five, 4);
  testing::write_bytes(path, too_long);
  expect_load_error(path, 5, "token 0 has length 5");
}

TEST(Llama2cTokenizerFile, TruncatedStories15m) {
  HIPSTUDIO_REQUIRE_STORIES15M_TOKENIZER();
  testing::TempDir dir;
  const std::string bytes = testing::read_bytes(stories15m_tokenizer_path());
  testing::write_bytes(dir.file("tokenizer.bin"), bytes.substr(0, bytes.size() / 2));
  expect_load_error(dir.file("tokenizer.bin"), kStories15mVocab, "ends inside");
  testing::write_bytes(dir.file("tokenizer.bin"), bytes);
  expect_load_error(dir.file("tokenizer.bin"), 32001, "ends inside token 32000 of the 32001");
}

}  // namespace
}  // namespace hipstudio
