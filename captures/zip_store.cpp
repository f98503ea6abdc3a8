#include "captures/zip_store.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <stdexcept>

#include <zlib.h>

#include "engine/formats/errors.h"

namespace hipstudio::captures {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22;
constexpr uint16_t kUtf8Flag = 0x0800;   // general purpose bit 11: names are UTF-8
constexpr uint16_t kDosDate1980 = 0x21;  // 1980-01-01: fixed, so equal captures give equal bytes
constexpr uint16_t kAlignExtraId = 0xD935;  // the padding extra field Android's zipalign uses
constexpr size_t kAlign = 64;

void put16(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
}
void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}
uint32_t get16(std::string_view b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8;
}
uint32_t get32(std::string_view b, size_t at) { return get16(b, at) | get16(b, at + 2) << 16; }

// Names become paths when a user unzips a capture: keep them relative and tame.
bool safe_name(const std::string& n) {
  if (n.empty() || n.size() > 1024 || n.front() == '/' || n.back() == '/') return false;
  if (n.find('\\') != std::string::npos || n.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= n.size()) {
    const size_t end = std::min(n.find('/', start), n.size());
    const std::string part = n.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

uint32_t crc32(std::string_view bytes, uint32_t crc) {
  // zlib takes uInt lengths: feed it below 1 GiB at a time.
  constexpr size_t kPiece = size_t{1} << 30;
  uLong c = crc;
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const size_t n = std::min(kPiece, bytes.size() - at);
    c = ::crc32(c, reinterpret_cast<const Bytef*>(bytes.data() + at), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(c);
}

void ZipWriter::add(const std::string& name, std::string_view data) { add_entry(name, data, central_); }
void ZipWriter::add_listed_first(const std::string& name, std::string_view data) { add_entry(name, data, central_first_); }

void ZipWriter::add_entry(const std::string& name, std::string_view data, std::string& central) {
  constexpr uint64_t kLimit = std::numeric_limits<uint32_t>::max();
  if (finished_) throw std::logic_error("ZipWriter::add after finish");
  if (!safe_name(name)) throw InputError("capture entry name '" + name + "' is not a safe relative path");
  if (!names_.insert(name).second) throw InputError("capture entry '" + name + "' is written twice");
  if (data.size() >= kLimit || offset_ + data.size() + 1024 >= kLimit)
    throw InputError("the capture would exceed 4 GiB (entry '" + name + "'), the limit of this zip writer: store fewer "
                     "layers (--inputs-layers), leave out the Q/K/V (--no-inputs) or the mask view (--views without mask), "
                     "or capture a shorter prompt");
  if (names_.size() > 0xffff) throw InputError("a capture holds at most 65535 entries");
  const uint32_t offset = static_cast<uint32_t>(offset_);
  const uint32_t crc = crc32(data);
  // Pad the extra field so that the data starts on a 64-byte boundary (4 bytes of field header).
  const size_t pad = (kAlign - (offset_ + kLocalSize + name.size() + 4) % kAlign) % kAlign;
  const size_t extra = 4 + pad;
  std::string header;
  put32(header, kLocalSig);
  put16(header, 20);  // version needed: 2.0
  put16(header, kUtf8Flag);
  put16(header, 0);   // method: stored
  put16(header, 0);
  put16(header, kDosDate1980);
  put32(header, crc);
  put32(header, static_cast<uint32_t>(data.size()));
  put32(header, static_cast<uint32_t>(data.size()));
  put16(header, static_cast<uint32_t>(name.size()));
  put16(header, static_cast<uint32_t>(extra));
  header += name;
  put16(header, kAlignExtraId);
  put16(header, static_cast<uint32_t>(pad));
  header.append(pad, '\0');
  sink_(header);
  sink_(data);
  offset_ += header.size() + data.size();

  put32(central, kCentralSig);
  put16(central, 0x0314);  // made by: Unix, spec 2.0
  put16(central, 20);
  put16(central, kUtf8Flag);
  put16(central, 0);
  put16(central, 0);
  put16(central, kDosDate1980);
  put32(central, crc);
  put32(central, static_cast<uint32_t>(data.size()));
  put32(central, static_cast<uint32_t>(data.size()));
  put16(central, static_cast<uint32_t>(name.size()));
  put16(central, 0);  // extra
  put16(central, 0);  // comment
  put16(central, 0);  // disk
  put16(central, 0);  // internal attributes
  put32(central, 0100644u << 16);  // external: a regular file, rw-r--r--
  put32(central, offset);
  central += name;
}

void ZipWriter::finish() {
  if (finished_) throw std::logic_error("ZipWriter::finish twice");
  finished_ = true;
  const uint32_t cd_offset = static_cast<uint32_t>(offset_);
  std::string end = central_first_ + central_;
  put32(end, kEndSig);
  put16(end, 0);
  put16(end, 0);
  put16(end, static_cast<uint32_t>(names_.size()));
  put16(end, static_cast<uint32_t>(names_.size()));
  put32(end, static_cast<uint32_t>(central_first_.size() + central_.size()));
  put32(end, cd_offset);
  put16(end, 0);
  sink_(end);
  offset_ += end.size();
}

std::string zip_encode(const std::vector<ZipEntry>& entries) {
  if (entries.size() > 0xffff) throw InputError("a capture holds at most 65535 entries");
  std::string out;
  ZipWriter w([&out](std::string_view bytes) { out.append(bytes); });
  for (const ZipEntry& e : entries) w.add(e.name, e.data);
  w.finish();
  return out;
}

namespace {
[[noreturn]] void damaged(const std::string& what, const std::string& why) {
  throw InputError(what + ": damaged capture: " + why + "; write the capture again (or restore a copy)");
}
}  // namespace

void check_entry_crc(const ZipEntryView& e, const std::string& what) {
  if (crc32(e.data) != e.crc) damaged(what, "entry '" + e.name + "' fails its CRC-32 check (its bytes were changed)");
}

std::vector<ZipEntry> zip_decode(std::string_view b, const std::string& what) {
  std::vector<ZipEntry> entries;
  for (const ZipEntryView& e : zip_index(b, what)) {
    check_entry_crc(e, what);
    entries.push_back({e.name, std::string(e.data)});
  }
  return entries;
}

std::vector<ZipEntryView> zip_index(std::string_view b, const std::string& what) {
  auto fail = [&](const std::string& why) -> void { damaged(what, why); };
  if (b.size() < kEndSize) fail("the file is " + std::to_string(b.size()) + " bytes, too short to be a capture (truncated?)");
  // The end record sits in the last 22 + 65535 bytes (it may carry a comment).
  size_t end = std::string_view::npos;
  const size_t lowest = b.size() > kEndSize + 0xffff ? b.size() - kEndSize - 0xffff : 0;
  for (size_t at = b.size() - kEndSize + 1; at-- > lowest;) {
    if (get32(b, at) == kEndSig && at + kEndSize + get16(b, at + 20) == b.size()) {
      end = at;
      break;
    }
  }
  if (end == std::string_view::npos) fail("no ZIP end-of-directory record (the file is truncated or not a capture)");
  if (get16(b, end + 4) != 0 || get16(b, end + 6) != 0) fail("multi-part archives are not captures");
  const uint32_t count = get16(b, end + 10);
  if (count != get16(b, end + 8)) fail("the end record disagrees with itself about the entry count");
  const uint64_t cd_size = get32(b, end + 12), cd_offset = get32(b, end + 16);
  if (cd_offset + cd_size != end) fail("the central directory does not end where the end record starts (offset/size damaged)");

  std::vector<ZipEntryView> entries;
  std::set<std::string> names;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [local header, data end) of every entry
  size_t at = cd_offset;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string index = "directory entry " + std::to_string(i);
    if (at + kCentralSize > end || get32(b, at) != kCentralSig) fail(index + " is missing or its signature is wrong");
    const uint32_t flags = get16(b, at + 8), method = get16(b, at + 10), crc = get32(b, at + 16);
    const uint64_t csize = get32(b, at + 20), usize = get32(b, at + 24);
    const size_t name_len = get16(b, at + 28), extra_len = get16(b, at + 30), comment_len = get16(b, at + 32);
    const uint64_t local = get32(b, at + 42);
    if (at + kCentralSize + name_len + extra_len + comment_len > end) fail(index + " runs past the directory");
    const std::string name(b.substr(at + kCentralSize, name_len));
    const std::string label = index + " ('" + name + "')";
    if (!safe_name(name)) fail(label + " has an unsafe or empty name");
    if (!names.insert(name).second) fail(label + " appears twice");
    if (flags & 0x0001) fail(label + " is encrypted");
    if (method != 0 || csize != usize) fail(label + " is compressed (method " + std::to_string(method) + "); captures store entries uncompressed");
    if (local + kLocalSize > cd_offset || get32(b, local) != kLocalSig) fail(label + ": its local header is not where the directory says");
    const size_t lname = get16(b, local + 26), lextra = get16(b, local + 28);
    if (local + kLocalSize + lname + lextra > cd_offset) fail(label + ": its local header runs past the data area");
    if (b.substr(local + kLocalSize, lname) != name) fail(label + ": the local header names another entry");
    if (get16(b, local + 8) != method || get32(b, local + 18) != csize || get32(b, local + 22) != usize ||
        (!(get16(b, local + 6) & 0x0008) && get32(b, local + 14) != crc))
      fail(label + ": the local header disagrees with the directory");
    const uint64_t data = local + kLocalSize + lname + lextra;
    if (data + csize > cd_offset) fail(label + ": its data runs past the data area (" + std::to_string(csize) + " bytes claimed)");
    ranges.emplace_back(local, data + csize);
    entries.push_back({name, b.substr(data, csize), crc});
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  if (at != end) fail("the central directory holds more bytes than its entries");
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) fail("two entries overlap");
  return entries;
}

}  // namespace hipstudio::captures
