// libFuzzer target: a safetensors file (engine/formats/safetensors.h): 8-byte header length, JSON
// header, data section. The parser maps a path, so the input is written to a scratch file.
// Every tensor of an accepted file must lie inside the mapping with nbytes = numel * dtype size:
// reading all of its bytes (ASan watches) and the sums below check that.
#include "engine/formats/safetensors.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("model.safetensors", data, size);
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const SafetensorsFile file(path);
    uint64_t total = 0;
    unsigned checksum = 0;
    for (const TensorInfo& t : file.tensors()) {
      fuzz::require(t.nbytes == static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype),
                    "tensor nbytes disagrees with its shape and dtype");
      fuzz::require(file.find(t.name) == &t, "tensor not found by its own name");
      const auto* bytes = static_cast<const unsigned char*>(t.data);
      for (uint64_t i = 0; i < t.nbytes; ++i) checksum += bytes[i];
      total += t.nbytes;
    }
    fuzz::require(total <= size, "tensors claim more bytes than the file holds");
    (void)checksum;
    // The same file through the model-level loader (single-file form).
    const SafetensorsModel model(path);
    fuzz::require(model.names().size() == file.tensors().size(), "model lost or invented tensors");
  });
  return 0;
}
