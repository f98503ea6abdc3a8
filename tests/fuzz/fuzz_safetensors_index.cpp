// libFuzzer target: a sharded model's model.safetensors.index.json (engine/formats/safetensors.h).
// The input is the index text; beside it lie two small valid shards written once at start-up
// (shard-a.safetensors: "a.weight", "b.weight"; shard-b.safetensors: "c.weight"), so the fuzzer can
// map tensors to real, missing or wrong shards, or to paths outside the folder.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/formats/safetensors.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;

namespace {
const std::filesystem::path& model_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d = fuzz::scratch_dir() / "sharded";
    std::filesystem::create_directories(d);
    const std::vector<float> two = {1.0f, 2.0f};
    const std::vector<uint16_t> three = {1, 2, 3};
    write_safetensors((d / "shard-a.safetensors").string(),
                      {{"a.weight", StoredDType::F32, {2}, two.data()}, {"b.weight", StoredDType::BF16, {3}, three.data()}});
    write_safetensors((d / "shard-b.safetensors").string(), {{"c.weight", StoredDType::F32, {1, 2}, two.data()}});
    return d;
  }();
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = model_dir();
  fuzz::write_scratch("sharded/model.safetensors.index.json", data, size);
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const SafetensorsModel model(dir.string());
    for (const std::string& name : model.names()) {
      const TensorInfo& t = model.get(name);
      fuzz::require(t.name == name, "index maps a name to another tensor");
      const auto* bytes = static_cast<const unsigned char*>(t.data);
      unsigned checksum = 0;
      for (uint64_t i = 0; i < t.nbytes; ++i) checksum += bytes[i];
      (void)checksum;
    }
  });
  return 0;
}
