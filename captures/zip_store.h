#pragma once
// A minimal writer and validating reader of uncompressed ("stored") ZIP archives: the container of
// capture files. Stored entries keep the bytes as they are, so any zip tool (and numpy.load, which
// reads a zip of .npy files as an NpzFile) opens a capture, and each entry's data starts on a
// 64-byte boundary (padding in the local header's extra field) so arrays could be mapped in place.
// No ZIP64: an archive and each entry stay below 4 GiB (the writer says so when exceeded).
#include <cstdint>
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

// The archive image; entries in the given order. Throws InputError for a bad or repeated name or
// an archive over 4 GiB.
std::string zip_encode(const std::vector<ZipEntry>& entries);

// Validates and decodes an archive: end record, central directory, every local header against it,
// offsets and sizes inside the file, no overlapping entries, stored method only, CRC-32 of every
// entry, safe unique names. `what` names the file in messages. Throws InputError saying what is
// damaged, e.g. "FILE: damaged capture: entry 'manifest.json' fails its CRC-32 check".
std::vector<ZipEntry> zip_decode(std::string_view bytes, const std::string& what);

}  // namespace hipstudio::captures
