// libFuzzer target: NumPy .npy images (captures/npy.h parse_npy: what read_npy and the capture
// reader run on file bytes). An accepted array must hold exactly numel * itemsize bytes and survive
// encode_npy -> parse_npy unchanged (so a `mask --q` input is never read as other numbers).
#include "captures/npy.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;
using namespace hipstudio::captures;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const NpyArray a = parse_npy(data, size, "fuzz.npy");
    int64_t numel = 1;
    for (int64_t d : a.shape) {
      fuzz::require(d >= 0, "accepted a negative dimension");
      numel *= d;
    }
    fuzz::require(numel == a.numel(), "numel disagrees with the shape");
    fuzz::require(a.bytes.size() == static_cast<size_t>(numel * npy_itemsize(a.dtype)),
                  "element bytes disagree with shape and dtype");
    const std::vector<unsigned char> again = encode_npy(a.dtype, a.shape, a.bytes.data());
    const NpyArray b = parse_npy(again.data(), again.size(), "round trip");
    fuzz::require(b.dtype == a.dtype && b.shape == a.shape && b.bytes == a.bytes, "npy round trip changed the array");
  });
  return 0;
}
