#pragma once
// A minimal writer and validating reader of uncompressed ("stored") ZIP archives: the container of
// capture files. Stored entries keep the bytes as they are, so any zip tool (and numpy.load, which
// reads a zip of .npy files as an NpzFile) opens a capture, and each entry's data starts on a
// 64-byte boundary (padding in the local header's extra field) so arrays could be mapped in place.
// No ZIP64: an archive and each entry stay below 4 GiB (the writer says so when exceeded).
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hipstudio::captures {

struct ZipEntry {
  std::string name;  // '/'-separated relative path: no leading '/', no '..', no '\\'
  std::string data;
};

// CRC-32 (IEEE 802.3, the one ZIP stores), continuing from `crc` (0 for a fresh sum).
uint32_t crc32(std::string_view bytes, uint32_t crc = 0);

// Writes an archive entry by entry through `sink` (a file, a FIFO, a string): each add() emits the
// entry's local header and bytes at once, so a writer never holds the whole archive; finish()
// emits the central directory and end record. The bytes are zip_encode's, which is this writer
// over a string. Throws InputError for a bad or repeated name or an archive over 4 GiB (before
// the entry's bytes reach the sink).
class ZipWriter {
 public:
  using Sink = std::function<void(std::string_view)>;
  explicit ZipWriter(Sink sink) : sink_(std::move(sink)) {}
  void add(const std::string& name, std::string_view data);
  void finish();
  uint64_t bytes_written() const { return offset_; }

 private:
  Sink sink_;
  std::string central_;
  std::set<std::string> names_;
  uint64_t offset_ = 0;
  bool finished_ = false;
};

// The archive image; entries in the given order. Throws InputError for a bad or repeated name or
// an archive over 4 GiB.
std::string zip_encode(const std::vector<ZipEntry>& entries);

// Validates and decodes an archive: end record, central directory, every local header against it,
// offsets and sizes inside the file, no overlapping entries, stored method only, CRC-32 of every
// entry, safe unique names. `what` names the file in messages. Throws InputError saying what is
// damaged, e.g. "FILE: damaged capture: entry 'manifest.json' fails its CRC-32 check".
std::vector<ZipEntry> zip_decode(std::string_view bytes, const std::string& what);

}  // namespace hipstudio::captures
