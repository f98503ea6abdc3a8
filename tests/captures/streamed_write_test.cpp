// Streamed capture writing: ZipWriter emits each entry through its sink as it is added (the bytes
// of zip_encode), and AtomicOutput keeps the atomic-output rule when the pieces come one by one.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "captures/atomic_file.h"
#include "captures/zip_store.h"

namespace hipstudio::captures {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST(ZipWriter, StreamsEachEntryAtOnceWithTheBytesOfZipEncode) {
  const std::vector<ZipEntry> entries = {
      {"manifest.json", "{}\n"}, {"a/b.npy", std::string(1000, 'x')}, {"c.npy", ""}, {"images/d.png", "png"}};
  std::string streamed;
  std::vector<size_t> after_add;  // bytes the sink had received after each add()
  ZipWriter w([&](std::string_view b) { streamed.append(b); });
  for (const ZipEntry& e : entries) {
    w.add(e.name, e.data);
    after_add.push_back(streamed.size());
    EXPECT_EQ(streamed.compare(streamed.size() - e.data.size(), e.data.size(), e.data), 0) << e.name;
    EXPECT_EQ((streamed.size() - e.data.size()) % 64, 0u) << e.name << ": data not on a 64-byte boundary";
  }
  w.finish();
  EXPECT_EQ(streamed, zip_encode(entries));
  EXPECT_EQ(w.bytes_written(), streamed.size());
  EXPECT_GT(after_add.front(), 0u);
  EXPECT_EQ(zip_decode(streamed, "streamed").size(), entries.size());
  ZipWriter twice([](std::string_view) {});
  twice.add("x", "1");
  EXPECT_THROW(twice.add("x", "2"), std::exception);
}

TEST(AtomicOutput, PiecesReplaceTheFileOnCommitAndNothingWithoutIt) {
  const auto dir = std::filesystem::temp_directory_path() / "hipstudio-atomic-output-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto target = dir / "run.hipcap";
  write_file_atomic(target.string(), "old");
  {
    AtomicOutput out(target.string());
    out.write("new ");
    EXPECT_EQ(read_file(target), "old");  // pieces go to the temporary beside it
    out.write("bytes");
    out.commit();
  }
  EXPECT_EQ(read_file(target), "new bytes");
  {
    AtomicOutput out(target.string());
    out.write("half of a capture");
  }  // an error before commit(): the temporary goes, the earlier file stays
  EXPECT_EQ(read_file(target), "new bytes");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hipstudio::captures
