// Captures are written streamed (arrays in name order, the manifest last in the file and first in
// its directory) and read from a memory mapping: a read without the inputs never looks at the
// Q/K/V entries' bytes, and every entry it does read is still checked.
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "captures/capture.h"
#include "captures/npy.h"
#include "captures/zip_store.h"
#include "engine/formats/errors.h"
#include "tests/captures/capture_fixture.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio::captures {
namespace {

// The file's bytes with one byte of entry `name`'s data flipped (its CRC-32 left as it was).
std::string with_flipped_byte(const std::string& bytes, const std::string& name) {
  std::string out = bytes;
  for (const ZipEntryView& e : zip_index(bytes, "x"))
    if (e.name == name) out[static_cast<size_t>(e.data.data() - bytes.data()) + e.data.size() - 1] ^= 0x20;
  return out;
}

std::string rejection(const std::function<void()>& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(MappedRead, TheManifestIsWrittenLastAndListedFirst) {
  const std::string bytes = encode_capture(hipstudio::testing::synthetic_capture());
  const std::vector<ZipEntryView> entries = zip_index(bytes, "x");
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.front().name, "manifest.json");
  for (const ZipEntryView& e : entries) EXPECT_LE(e.data.data(), entries.front().data.data()) << e.name << " after the manifest";
  // Every entry's data starts on a 64-byte boundary, so an array can be used in place.
  for (const ZipEntryView& e : entries) EXPECT_EQ((e.data.data() - bytes.data()) % 64, 0) << e.name;
}

TEST(MappedRead, AReadWithoutInputsNeverLooksAtTheirBytes) {
  hipstudio::testing::TempDir dir;
  const std::string path = dir.file("c.hipcap");
  write_capture(path, hipstudio::testing::synthetic_capture());
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << with_flipped_byte(bytes, "inputs/L1/q.npy");
  }
  CaptureReadOptions no_inputs;
  no_inputs.inputs = false;
  const Capture c = read_capture(path, no_inputs);
  EXPECT_TRUE(c.analysis.inputs.empty());
  EXPECT_EQ(c.masks.size(), 2u);
  EXPECT_NE(rejection([&] { read_capture(path); }).find("entry 'inputs/L1/q.npy' fails its CRC-32 check"), std::string::npos);
  // Any other entry is still checked when the inputs are left out.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << with_flipped_byte(bytes, "masks/L1/hip/blocks.npy");
  }
  EXPECT_NE(rejection([&] { read_capture(path, no_inputs); }).find("entry 'masks/L1/hip/blocks.npy' fails its CRC-32 check"),
            std::string::npos);
  EXPECT_NE(rejection([&] { read_capture_manifest(dir.file("missing.hipcap")); }).find("cannot open the capture"), std::string::npos);
}

TEST(MappedRead, AnNpyViewHoldsWhatParseNpyCopies) {
  const std::vector<double> values{1.5, -2.0, 3.25, 4.0, 5.0, 6.5};
  const std::vector<unsigned char> image = encode_npy(NpyDType::F64, {2, 3}, values.data());
  const NpyArray copied = parse_npy(image.data(), image.size(), "a.npy");
  const NpyView view = parse_npy_view(image.data(), image.size(), "a.npy");
  EXPECT_EQ(view.dtype, copied.dtype);
  EXPECT_EQ(view.shape, copied.shape);
  EXPECT_EQ(view.numel(), 6);
  ASSERT_EQ(view.nbytes, copied.bytes.size());
  EXPECT_EQ(std::memcmp(view.elements, copied.bytes.data(), view.nbytes), 0);
  EXPECT_GE(view.elements, image.data());
  EXPECT_LE(view.elements + view.nbytes, image.data() + image.size());  // a view, inside the image
  EXPECT_THROW(parse_npy_view(image.data(), image.size() - 8, "a.npy"), InputError);
}

TEST(MappedRead, ZlibsCrcIsTheZipCrc) {
  // The check value of CRC-32/ISO-HDLC, and a sum continued across pieces.
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32("56789", crc32("1234")), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
}

}  // namespace
}  // namespace hipstudio::captures
