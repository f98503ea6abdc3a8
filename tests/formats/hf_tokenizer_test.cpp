// Hugging Face tokenizers: the tokenizer.json converted from llama2.c must tokenize exactly as the
// llama2.c tokenizer; a hand-made byte-level BPE must give ids derived by hand; bad files give
// InputErrors that say what is wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/formats/errors.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/formats/sample_texts.h"
#include "tests/formats/stories15m.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;
using testing::TempDir;

std::vector<std::string> varied_texts() {
  std::vector<std::string> texts = testing::sample_texts();
  for (const std::string& text : testing::random_texts(300, 3)) texts.push_back(text);
  return texts;
}

void expect_same_tokenizer(const Tokenizer& hf, const Tokenizer& reference, const std::vector<std::string>& texts) {
  for (const std::string& text : texts) {
    for (bool bos : {true, false}) {
      const Ids ids = reference.encode(text, bos);
      ASSERT_EQ(hf.encode(text, bos), ids) << text;
      ASSERT_EQ(hf.decode(ids), reference.decode(ids)) << text;
    }
  }
}

// Converts stories15M's tokenizer once for the suite; tests that edit the files work on copies.
class ConvertedLlama2c : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(testing::stories15m_tokenizer_path())) return;
    converted_ = new TempDir;
    write_hf_tokenizer_from_llama2c(testing::stories15m_tokenizer_path(), testing::kStories15mVocab,
                                    converted_->file("hf"));
  }
  static void TearDownTestSuite() {
    delete converted_;
    converted_ = nullptr;
  }
  void SetUp() override {
    HIPSTUDIO_REQUIRE_STORIES15M_TOKENIZER();
    reference_ = load_llama2c_tokenizer(testing::stories15m_tokenizer_path(), testing::kStories15mVocab);
  }
  // A private copy of the converted files, for tests that edit them.
  std::string copy_converted() const {
    std::filesystem::copy(converted_->file("hf"), dir_.file("hf"));
    return dir_.file("hf");
  }
  static inline TempDir* converted_ = nullptr;
  TempDir dir_;
  std::unique_ptr<Tokenizer> reference_;
};

TEST_F(ConvertedLlama2c, EncodesAndDecodesAsLlama2c) {
  const auto hf = load_hf_tokenizer(converted_->file("hf"));
  expect_same_tokenizer(*hf, *reference_, varied_texts());
  EXPECT_EQ(hf->encode("Once upon a time", true), (Ids{1, 9038, 2501, 263, 931}));
  EXPECT_EQ(hf->bos_id(), 1);
  EXPECT_EQ(hf->eos_id(), 2);
  ASSERT_EQ(hf->vocab_size(), reference_->vocab_size());
  for (int32_t id = 0; id < hf->vocab_size(); ++id) ASSERT_EQ(hf->token_text(id), reference_->token_text(id)) << id;
  EXPECT_FALSE(std::filesystem::exists(converted_->file("hf/tokenizer.json.tmp")));

  const json written = json::parse(testing::read_bytes(converted_->file("hf/tokenizer.json")));
  EXPECT_EQ(written["model"]["vocab"].size(), 32000u);
  EXPECT_EQ(written["model"]["vocab"]["\xE2\x96\x81Once"], 9038);  // "▁Once"
  EXPECT_EQ(written["model"]["vocab"]["<0x0A>"], 13);
  EXPECT_GT(written["model"]["merges"].size(), 30000u);
  const json config = json::parse(testing::read_bytes(converted_->file("hf/tokenizer_config.json")));
  EXPECT_EQ(config["add_bos_token"], true);
  EXPECT_EQ(config["bos_token"], "<s>");
}

// The older Llama/Mistral layout: no normalizer, a Metaspace pre-tokenizer and decoder. It differs
// from SentencePiece only on text that starts with a space: Metaspace prepends no '▁' there.
TEST_F(ConvertedLlama2c, MetaspaceLayoutEncodesTheSame) {
  copy_converted();
  json tokenizer = json::parse(testing::read_bytes(dir_.file("hf/tokenizer.json")));
  tokenizer["normalizer"] = nullptr;
  tokenizer["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"},
                                {"prepend_scheme", "first"}, {"split", false}};
  tokenizer["decoder"] = {{"type", "Sequence"},
                          {"decoders", {{{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}},
                                        {{"type", "ByteFallback"}},
                                        {{"type", "Fuse"}}}}};
  testing::write_bytes(dir_.file("hf/tokenizer.json"), tokenizer.dump());
  const auto hf = load_hf_tokenizer(dir_.file("hf/tokenizer.json"));
  std::vector<std::string> texts;
  for (const std::string& text : varied_texts())
    if (text.empty() || text[0] != ' ') texts.push_back(text);
  expect_same_tokenizer(*hf, *reference_, texts);
  EXPECT_EQ(hf->encode(" x", false), (Ids{921}));                // "▁x"
  EXPECT_EQ(reference_->encode(" x", false), (Ids{29871, 921}));  // "▁" "▁x"

  // split: true starts a word at every '▁', so runs of spaces no longer merge across words.
  tokenizer["pre_tokenizer"]["split"] = true;
  testing::write_bytes(dir_.file("hf/tokenizer.json"), tokenizer.dump());
  const auto split = load_hf_tokenizer(dir_.file("hf"));
  EXPECT_EQ(split->encode("Once upon a time", true), (Ids{1, 9038, 2501, 263, 931}));
  EXPECT_EQ(split->encode("a    b", false), (Ids{263, 29871, 29871, 29871, 289}));  // "▁a" "▁" "▁" "▁" "▁b"
  EXPECT_EQ(reference_->encode("a    b", false), (Ids{263, 1678, 289}));  // " a" "   " " b"
}

TEST_F(ConvertedLlama2c, SpecialTokensInTextAndConfigIds) {
  copy_converted();
  const auto hf = load_hf_tokenizer(dir_.file("hf"));
  // HF cuts added tokens out of the text first; each piece around them gets its own '▁' prefix.
  EXPECT_EQ(hf->encode("Once</s>Once", false), (Ids{9038, 2, 9038}));
  std::filesystem::remove(dir_.file("hf/tokenizer_config.json"));
  const auto from_template = load_hf_tokenizer(dir_.file("hf"));  // BOS from the post-processor
  EXPECT_EQ(from_template->encode("Once", true), (Ids{1, 9038}));
  EXPECT_EQ(from_template->eos_id(), 2);                         // "</s>" among the added tokens
  EXPECT_EQ(load_hf_tokenizer(dir_.file("hf"), 0, 1)->eos_id(), 1);  // config.json's ids win over guesses
  EXPECT_THROW(load_hf_tokenizer(dir_.file("hf"), 32000), InputError);
}

// ---- a byte-level BPE made by hand -----------------------------------------------------------

// GPT-2's bytes_to_unicode, written out again here so the test does not trust the code under test.
std::string byte_char(int b) {
  int cp = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int k = 0; k < b; ++k)
      if (!((k >= 33 && k <= 126) || (k >= 161 && k <= 172) || (k >= 174 && k <= 255))) ++n;
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Ids 0-255 are the bytes themselves, so an unmerged byte's id is its value. Merges, by rank:
//   0 "Ġ t"->256 "Ġt"   1 "h e"->257 "he"   2 "Ġt he"->258 "Ġthe"   3 "i s"->259 "is"
//   4 "' s"->260 "'s"   5 "1 2"->261 "12"   6 "Ġ Ġ"->262 "ĠĠ"       7 "Ã ©"->263 "é" (C3 A9)
//   8 "' T"->268 "'T"   9 "3 4"->269 "34"
// 266 "Ġcat" has no merge that makes it (only ignore_merges can emit it). Added: 264 <|endoftext|>,
// 265 <|sep|>, 267 <|begin_of_text|>, all special.
json byte_level_tokenizer(bool llama3) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
  const std::string G = byte_char(' ');
  const std::vector<std::pair<std::string, std::string>> merges = {
      {G, "t"}, {"h", "e"}, {G + "t", "he"}, {"i", "s"}, {"'", "s"}, {"1", "2"}, {G, G},
      {byte_char(0xC3), byte_char(0xA9)}, {"'", "T"}, {"3", "4"}};
  const int merged_ids[] = {256, 257, 258, 259, 260, 261, 262, 263, 268, 269};
  json merge_list = json::array();
  for (size_t i = 0; i < merges.size(); ++i) {
    vocab[merges[i].first + merges[i].second] = merged_ids[i];
    // Both spellings of a merge appear in real files.
    if (i % 2) merge_list.push_back(merges[i].first + " " + merges[i].second);
    else merge_list.push_back({merges[i].first, merges[i].second});
  }
  vocab[G + "cat"] = 266;
  const auto added = [](int id, const char* content) {
    return json{{"id", id}, {"content", content}, {"special", true}, {"lstrip", false}, {"rstrip", false},
                {"normalized", false}, {"single_word", false}};
  };
  json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", {added(264, "<|endoftext|>"), added(265, "<|sep|>"), added(267, "<|begin_of_text|>")}},
      {"normalizer", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}, {"ignore_merges", llama3},
                 {"byte_fallback", false}, {"unk_token", nullptr}}},
  };
  if (llama3) {
    tokenizer["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                           {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    const json bos = {{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}};
    json template_step = {{"type", "TemplateProcessing"}};
    template_step["single"] = {bos, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}};
    template_step["special_tokens"]["<|begin_of_text|>"] = {{"id", "<|begin_of_text|>"}, {"ids", {267}}};
    tokenizer["post_processor"] = {{"type", "Sequence"}, {"processors", {{{"type", "ByteLevel"}}, template_step}}};
  } else {
    tokenizer["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    tokenizer["post_processor"] = {{"type", "ByteLevel"}};
  }
  return tokenizer;
}

std::unique_ptr<Tokenizer> load_json(const TempDir& dir, const json& tokenizer) {
  testing::write_bytes(dir.file("tokenizer.json"), tokenizer.dump());
  return load_hf_tokenizer(dir.path().string());
}

TEST(ByteLevelBpe, Gpt2HandDerivedIds) {
  TempDir dir;
  const auto tok = load_json(dir, byte_level_tokenizer(false));
  // Split "the" " cat" "'s" " 12" " dogs"; "he" merges, "Ġ c" does not, "'s" and "12" do.
  EXPECT_EQ(tok->encode("the cat's 12 dogs", false),
            (Ids{'t', 257, ' ', 'c', 'a', 't', 260, ' ', 261, ' ', 'd', 'o', 'g', 's'}));
  EXPECT_EQ(tok->encode(" the", false), (Ids{258}));  // Ġt (rank 0), he (1), then Ġthe (2)
  // "it" "'s" " " " is": the first of two spaces stays alone, the second joins "is".
  EXPECT_EQ(tok->encode("it's  is", false), (Ids{'i', 't', 260, ' ', ' ', 259}));
  EXPECT_EQ(tok->encode("a  \n", false), (Ids{'a', 262, '\n'}));  // trailing whitespace is one piece
  EXPECT_EQ(tok->encode("café<|sep|>x", false), (Ids{'c', 'a', 'f', 263, 265, 'x'}));
  EXPECT_EQ(tok->encode("a1234", false), (Ids{'a', 261, 269}));  // GPT-2 keeps "1234" whole
  EXPECT_EQ(tok->encode("DON'T", false), (Ids{'D', 'O', 'N', '\'', 'T'}));  // "'T" is no GPT-2 contraction
  EXPECT_EQ(tok->encode("中", false), (Ids{0xE4, 0xB8, 0xAD}));  // no merges: the UTF-8 bytes
  EXPECT_EQ(tok->encode(" cat", false), (Ids{' ', 'c', 'a', 't'}));  // no ignore_merges
  // <|begin_of_text|> is taken as BOS by its name, but without a config or template asking for it
  // encode adds none; <|endoftext|> is taken as EOS and decodes to nothing.
  EXPECT_EQ(tok->bos_id(), 267);
  EXPECT_EQ(tok->encode("x", true), (Ids{'x'}));
  EXPECT_EQ(tok->eos_id(), 264);
  EXPECT_EQ(tok->vocab_size(), 270);
  EXPECT_EQ(tok->decode({'a', 264}), "a");
  EXPECT_EQ(tok->token_text(256), " t");
  EXPECT_EQ(tok->token_text(263), "é");
  EXPECT_EQ(tok->token_text(0xE4), "<0xE4>");
  EXPECT_EQ(tok->token_text(265), "<|sep|>");
  for (const std::string& text : varied_texts()) {
    const Ids ids = tok->encode(text, true);
    ASSERT_EQ(tok->decode(ids), text);
  }
  EXPECT_EQ(tok->decode(tok->encode("café<|sep|>x", false)), "café<|sep|>x");
}

TEST(ByteLevelBpe, Llama3HandDerivedIds) {
  TempDir dir;
  const auto tok = load_json(dir, byte_level_tokenizer(true));
  EXPECT_EQ(tok->encode("a1234", false), (Ids{'a', 261, '3', '4'}));  // "123" "4": at most 3 digits
  EXPECT_EQ(tok->encode("DON'T", false), (Ids{'D', 'O', 'N', 268}));  // case-insensitive contraction
  EXPECT_EQ(tok->encode(" cat", false), (Ids{266}));  // ignore_merges: the whole word is a token
  EXPECT_EQ(tok->encode("it's  is", true), (Ids{267, 'i', 't', 260, ' ', ' ', 259}));  // BOS from the template
  EXPECT_EQ(tok->bos_id(), 267);
  EXPECT_EQ(tok->decode({267, 266, 263}), " caté");
  for (const std::string& text : varied_texts()) ASSERT_EQ(tok->decode(tok->encode(text, true)), text);

  // tokenizer_config.json decides over the template: Qwen2 says there is no BOS.
  testing::write_bytes(dir.file("tokenizer_config.json"), R"({"bos_token": null, "eos_token": "<|sep|>"})");
  const auto qwen = load_hf_tokenizer(dir.path().string(), 264, 264);
  EXPECT_EQ(qwen->bos_id(), -1);
  EXPECT_EQ(qwen->eos_id(), 265);
  EXPECT_EQ(qwen->encode("x", true), (Ids{'x'}));
  testing::write_bytes(dir.file("tokenizer_config.json"), R"({"bos_token": {"content": "<|begin_of_text|>"}, "add_bos_token": false})");
  EXPECT_EQ(load_hf_tokenizer(dir.path().string())->encode("x", true), (Ids{'x'}));
}

void expect_hf_error(const TempDir& dir, const json& tokenizer, const std::string& problem) {
  testing::write_bytes(dir.file("tokenizer.json"), tokenizer.dump());
  try {
    load_hf_tokenizer(dir.file("tokenizer.json"));
    ADD_FAILURE() << "no error; expected: " << problem;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.file("")), std::string::npos) << e.what();
  }
}

TEST(HfTokenizerErrors, ClearMessages) {
  TempDir dir;
  json tokenizer = byte_level_tokenizer(false);
  tokenizer["model"]["type"] = "WordPiece";
  expect_hf_error(dir, tokenizer, "model type");
  tokenizer = byte_level_tokenizer(false);
  tokenizer["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\w+"}}}, {"behavior", "Isolated"}};
  expect_hf_error(dir, tokenizer, "Split pattern");
  tokenizer = byte_level_tokenizer(false);
  tokenizer["normalizer"] = {{"type", "BertNormalizer"}};
  expect_hf_error(dir, tokenizer, "normalizer 'BertNormalizer' is not supported");
  tokenizer = byte_level_tokenizer(false);
  tokenizer["model"]["merges"].push_back("x yz");
  expect_hf_error(dir, tokenizer, "not in the vocab");
  tokenizer = byte_level_tokenizer(false);
  tokenizer["model"]["vocab"] = 3;
  expect_hf_error(dir, tokenizer, "vocab");
  testing::write_bytes(dir.file("tokenizer.json"), "{\"model\": ");
  EXPECT_THROW(load_hf_tokenizer(dir.file("tokenizer.json")), InputError);
  TempDir empty;
  EXPECT_THROW(load_hf_tokenizer(empty.path().string()), InputError);
  testing::write_bytes(dir.file("tokenizer.json"), byte_level_tokenizer(false).dump());
  testing::write_bytes(dir.file("tokenizer_config.json"), R"({"eos_token": "<|nope|>"})");
  try {
    load_hf_tokenizer(dir.path().string());
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("<|nope|>"), std::string::npos) << e.what();
  }
}

TEST(HfExport, BadInputs) {
  TempDir dir;
  EXPECT_THROW(write_hf_tokenizer_from_llama2c(dir.file("missing.bin"), 32000, dir.file("out")), InputError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/tokenizer.json")));
}

}  // namespace
}  // namespace hipstudio
