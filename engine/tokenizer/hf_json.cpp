// tokenizer.json -> HfPipeline. Only what BPE language models use is accepted; anything else is an
// InputError that names the unsupported component, so a user learns why their model does not load.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "engine/formats/errors.h"
#include "engine/tokenizer/hf_pipeline.h"
#include "engine/tokenizer/utf8.h"

namespace hipstudio {
namespace {

using json = nlohmann::json;

constexpr const char* kSupported =
    "HiP Studio reads BPE tokenizers of the GPT-2, Llama, Mistral, Llama-3 and Qwen2 families";

struct Parser {
  const std::string& path;

  [[noreturn]] void fail(const std::string& problem, const std::string& fix = kSupported) const {
    throw InputError(path + ": " + problem + "; " + fix);
  }

  std::string type_of(const json& node, const char* what) const {
    if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
      fail(std::string(what) + " has no \"type\"", "the file is not a valid tokenizer.json");
    return node["type"].get<std::string>();
  }

  // The steps of a component, with "Sequence" flattened ("normalizers", "pretokenizers", ...).
  std::vector<json> flatten(const json& node, const char* what, const char* list_key) const {
    if (node.is_null()) return {};
    if (type_of(node, what) != "Sequence") return {node};
    if (!node.contains(list_key) || !node[list_key].is_array())
      fail(std::string(what) + " Sequence has no \"" + list_key + "\" list", "the file is not a valid tokenizer.json");
    std::vector<json> out;
    for (const json& step : node[list_key]) {
      std::vector<json> inner = flatten(step, what, list_key);
      out.insert(out.end(), inner.begin(), inner.end());
    }
    return out;
  }

  std::string string_pattern(const json& step, const char* what) const {
    const json& pattern = step.value("pattern", json());
    if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
      return pattern["String"].get<std::string>();
    fail(std::string(what) + " Replace with a regex pattern is not supported (only {\"String\": ...})");
  }

  PrependScheme prepend_scheme(const json& step) const {
    if (step.contains("prepend_scheme") && step["prepend_scheme"].is_string()) {
      const std::string scheme = step["prepend_scheme"].get<std::string>();
      if (scheme == "always") return PrependScheme::Always;
      if (scheme == "first") return PrependScheme::First;
      if (scheme == "never") return PrependScheme::Never;
      fail("Metaspace prepend_scheme '" + scheme + "' is unknown", "expected always, first or never");
    }
    return step.value("add_prefix_space", true) ? PrependScheme::Always : PrependScheme::Never;
  }

  void parse_model(const json& model, HfBpeModel& out) const {
    if (!model.is_object()) fail("has no \"model\" object", "the file is not a valid tokenizer.json");
    if (model.contains("type") && model["type"] != "BPE")
      fail("model type " + model["type"].dump() + " is not supported (only BPE)");  // dump() quotes it once
    if (!model.contains("vocab") || !model["vocab"].is_object()) fail("model has no \"vocab\" object");
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
        fail("vocab entry '" + it.key() + "' has no valid id", "the file is not a valid tokenizer.json");
      out.vocab[it.key()] = it->get<int32_t>();
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
        fail(std::string("BPE ") + key + " is not supported");
    out.byte_fallback = model.value("byte_fallback", false);
    out.fuse_unk = model.value("fuse_unk", false);
    out.ignore_merges = model.value("ignore_merges", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      const auto it = out.vocab.find(model["unk_token"].get<std::string>());
      if (it != out.vocab.end()) out.unk = it->second;
    }
    const json& merges = model.value("merges", json::array());
    if (!merges.is_array()) fail("model \"merges\" is not a list", "the file is not a valid tokenizer.json");
    int64_t rank = 0;
    for (const json& merge : merges) {
      std::string left, right;
      if (merge.is_string()) {  // "a b"
        const std::string line = merge.get<std::string>();
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
          fail("merge \"" + line + "\" is not two tokens separated by one space", "the file is not a valid tokenizer.json");
        left = line.substr(0, space);
        right = line.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {  // ["a", "b"]
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        fail("merge " + merge.dump() + " is neither \"a b\" nor [\"a\", \"b\"]", "the file is not a valid tokenizer.json");
      }
      const auto l = out.vocab.find(left), r = out.vocab.find(right), m = out.vocab.find(left + right);
      if (l == out.vocab.end() || r == out.vocab.end() || m == out.vocab.end())
        fail("merge '" + left + "' + '" + right + "' uses or makes a token that is not in the vocab",
             "the file is not a valid tokenizer.json");
      const uint64_t key = (static_cast<uint64_t>(l->second) << 32) | static_cast<uint32_t>(r->second);
      out.merges[key] = BpeMerge{static_cast<double>(rank++), m->second};  // a repeated merge: the last wins, as in HF
    }
  }

  void parse_added(const json& added, std::vector<HfAddedToken>& out) const {
    if (added.is_null()) return;
    if (!added.is_array()) fail("\"added_tokens\" is not a list", "the file is not a valid tokenizer.json");
    for (const json& token : added) {
      if (!token.is_object() || !token.contains("id") || !token["id"].is_number_integer() ||
          !token.contains("content") || !token["content"].is_string() || token["id"].get<int64_t>() < 0 ||
          token["id"].get<int64_t>() > INT32_MAX)
        fail("an added token lacks an integer \"id\" or a string \"content\"", "the file is not a valid tokenizer.json");
      out.push_back({token["content"].get<std::string>(), token["id"].get<int32_t>(), token.value("special", false),
                     token.value("lstrip", false), token.value("rstrip", false)});
    }
  }

  void parse_normalizer(const json& node, std::vector<HfNormalizerStep>& out) const {
    for (const json& step : flatten(node, "normalizer", "normalizers")) {
      const std::string type = type_of(step, "normalizer");
      if (type == "Prepend") {
        out.push_back({HfNormalizerStep::Kind::Prepend, "", step.value("prepend", std::string())});
      } else if (type == "Replace") {
        out.push_back({HfNormalizerStep::Kind::Replace, string_pattern(step, "normalizer"),
                       step.value("content", std::string())});
      } else if (type == "NFC") {
        // Text typed or pasted is NFC already in practice; composing it here would need Unicode's
        // composition tables, so NFC is taken as the identity (Qwen2 declares it).
        out.push_back({HfNormalizerStep::Kind::Identity, "", ""});
      } else {
        fail("normalizer '" + type + "' is not supported (supported: Prepend, Replace, NFC, Sequence)");
      }
    }
  }

  void parse_pre_tokenizer(const json& node, std::vector<HfPreTokenizerStep>& out) const {
    for (const json& step : flatten(node, "pre_tokenizer", "pretokenizers")) {
      const std::string type = type_of(step, "pre_tokenizer");
      HfPreTokenizerStep parsed;
      if (type == "Split") {
        parsed.kind = HfPreTokenizerStep::Kind::Split;
        const json& pattern = step.value("pattern", json());
        const std::string regex = pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()
                                      ? pattern["Regex"].get<std::string>() : std::string();
        const std::optional<SplitRegex> known = split_regex_from_pattern(regex);
        if (!known)
          fail("pre_tokenizer Split pattern " + pattern.dump() + " is not one HiP Studio implements",
               "supported are the GPT-2, Llama-3 and Qwen2 regexes");
        if (step.value("behavior", std::string("Isolated")) != "Isolated" || step.value("invert", false))
          fail("pre_tokenizer Split with behavior other than Isolated (or inverted) is not supported");
        parsed.regex = *known;
      } else if (type == "ByteLevel") {
        parsed.kind = HfPreTokenizerStep::Kind::ByteLevel;
        parsed.use_regex = step.value("use_regex", true);
        parsed.add_prefix_space = step.value("add_prefix_space", false);
      } else if (type == "Metaspace") {
        parsed.kind = HfPreTokenizerStep::Kind::Metaspace;
        parsed.replacement = step.value("replacement", parsed.replacement);
        parsed.prepend = prepend_scheme(step);
        parsed.split = step.value("split", true);
      } else {
        fail("pre_tokenizer '" + type + "' is not supported (supported: Split, ByteLevel, Metaspace, Sequence)");
      }
      out.push_back(parsed);
    }
  }

  // The leading special token of the post-processor's single-sequence template, or -1.
  int32_t template_bos(const json& node) const {
    for (const json& step : flatten(node, "post_processor", "processors")) {
      if (type_of(step, "post_processor") != "TemplateProcessing") continue;
      const json& single = step.value("single", json::array());
      if (!single.is_array() || single.empty() || !single[0].contains("SpecialToken")) return -1;
      const std::string name = single[0]["SpecialToken"].value("id", std::string());
      const json& specials = step.value("special_tokens", json::object());
      if (specials.contains(name) && specials[name].contains("ids") && specials[name]["ids"].is_array() &&
          !specials[name]["ids"].empty() && specials[name]["ids"][0].is_number_integer())
        return specials[name]["ids"][0].get<int32_t>();
    }
    return -1;
  }

  // What each id decodes to: the decoder steps applied to each token on its own.
  DecodeTable decode_table(const json& node, const HfPipeline& pipeline) const {
    const std::vector<json> steps = flatten(node, "decoder", "decoders");
    for (const json& step : steps) {
      const std::string type = type_of(step, "decoder");
      if (type != "ByteLevel" && type != "Replace" && type != "ByteFallback" && type != "Fuse" &&
          type != "Strip" && type != "Metaspace")
        fail("decoder '" + type + "' is not supported (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)");
    }
    int32_t size = 0;
    for (const auto& [piece, id] : pipeline.model.vocab) size = std::max(size, id + 1);
    for (const HfAddedToken& token : pipeline.added) size = std::max(size, token.id + 1);
    DecodeTable table;
    table.bytes.assign(static_cast<size_t>(size), std::string());
    table.display.assign(static_cast<size_t>(size), std::string());
    for (const json& step : steps) {
      const std::string type = step["type"].get<std::string>();
      if (type == "Strip" && step.value("content", std::string(" ")) == " " && step.value("start", 0) >= 1)
        table.strip_dummy_prefix = true;
      if (type == "Metaspace" && prepend_scheme(step) != PrependScheme::Never) table.strip_dummy_prefix = true;
    }
    for (const auto& [piece, id] : pipeline.model.vocab) {
      std::string bytes = piece;
      for (const json& step : steps) bytes = decode_step(step, bytes);
      table.display[id] = utf8_display(bytes);
      table.bytes[id] = std::move(bytes);
    }
    for (const HfAddedToken& token : pipeline.added) {  // added tokens decode to their text as written
      table.bytes[token.id] = token.content;
      table.display[token.id] = utf8_display(token.content);
    }
    return table;
  }

  std::string decode_step(const json& step, const std::string& token) const {
    const std::string type = step["type"].get<std::string>();
    if (type == "Replace") return replace_all(token, string_pattern(step, "decoder"), step.value("content", std::string()));
    if (type == "Metaspace") return replace_all(token, step.value("replacement", std::string("\xE2\x96\x81")), " ");
    if (type == "ByteFallback") {
      // "<0xNN>" -> the byte NN.
      if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>' && std::isxdigit(static_cast<unsigned char>(token[3])) &&
          std::isxdigit(static_cast<unsigned char>(token[4])))
        return std::string(1, static_cast<char>(std::stoi(token.substr(3, 2), nullptr, 16)));
      return token;
    }
    if (type == "ByteLevel") {
      // Each character back to its byte; a token with a character outside the map stays as written.
      std::string bytes;
      for (size_t pos = 0; pos < token.size();) {
        const Utf8Char c = utf8_next(token, pos);
        const int byte = c.valid ? byte_level_decode(c.codepoint) : -1;
        if (byte < 0) return token;
        bytes.push_back(static_cast<char>(byte));
        pos += c.length;
      }
      return bytes;
    }
    return token;  // Fuse, Strip: whole-sequence steps, handled by DecodeTable
  }

  static std::string replace_all(std::string text, const std::string& pattern, const std::string& content) {
    if (pattern.empty()) return text;
    for (size_t pos = 0; (pos = text.find(pattern, pos)) != std::string::npos; pos += content.size())
      text.replace(pos, pattern.size(), content);
    return text;
  }
};

}  // namespace

HfPipeline parse_hf_tokenizer_json(const std::string& text, const std::string& path) {
  const Parser parser{path};
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    parser.fail(std::string("is not valid JSON (") + e.what() + ")", "re-download tokenizer.json");
  }
  if (!root.is_object()) parser.fail("is not a JSON object", "the file is not a valid tokenizer.json");
  HfPipeline pipeline;
  try {
    parser.parse_model(root.value("model", json()), pipeline.model);
    parser.parse_added(root.value("added_tokens", json()), pipeline.added);
    parser.parse_normalizer(root.value("normalizer", json()), pipeline.normalizer);
    parser.parse_pre_tokenizer(root.value("pre_tokenizer", json()), pipeline.pre_tokenizer);
    pipeline.template_bos = parser.template_bos(root.value("post_processor", json()));
    pipeline.decode = parser.decode_table(root.value("decoder", json()), pipeline);
  } catch (const json::exception& e) {  // a field of the wrong JSON type somewhere
    parser.fail(std::string("has an unexpected structure (") + e.what() + ")", "the file is not a valid tokenizer.json");
  }
  return pipeline;
}

}  // namespace hipstudio
