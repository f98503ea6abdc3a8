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

// CRC-32 (IEEE 802.3, the one ZIP stores), continuing from `crc` (0 for a fresh sum): zlib's,
// whose folding loop is several times faster than a byte table on a capture's gigabytes.
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
  // As add(), but listed first in the central directory (readers and `unzip -l` see it first)
  // wherever its bytes fall: a manifest written after the arrays it describes.
  void add_listed_first(const std::string& name, std::string_view data);
  void finish();
  uint64_t bytes_written() const { return offset_; }

 private:
  void add_entry(const std::string& name, std::string_view data, std::string& central);
  Sink sink_;
  std::string central_first_, central_;
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

// One entry of an archive, its bytes a view into the archive (a memory-mapped file's, say).
struct ZipEntryView {
  std::string name;
  std::string_view data;
  uint32_t crc = 0;  // as the directory records it
};
// zip_decode's checks of the container, without reading any entry's bytes: the directory, every
// local header, offsets, sizes, overlaps and names. Entries in directory order.
std::vector<ZipEntryView> zip_index(std::string_view bytes, const std::string& what);
// Throws zip_decode's InputError when `entry`'s bytes fail their CRC-32.
void check_entry_crc(const ZipEntryView& entry, const std::string& what);

}  // namespace hipstudio::captures
