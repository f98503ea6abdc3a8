#include "captures/content_hash.h"

#include <nlohmann/json.hpp>

namespace hipstudio::captures {

void hash_capture_array(Sha256& content, std::string_view name, std::string_view npy_bytes) {
  content.update(name);
  content.update(std::string_view("\0", 1));
  content.update(npy_bytes);
}

void rehash_capture_manifest(std::vector<ZipEntry>& entries) {
  ZipEntry* manifest = nullptr;
  for (ZipEntry& e : entries)
    if (e.name == "manifest.json") manifest = &e;
  if (!manifest) return;
  nlohmann::json m = nlohmann::json::parse(manifest->data, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object() || !m.contains("arrays") || !m["arrays"].is_object()) return;
  Sha256 content;
  for (const auto& item : m["arrays"].items()) {
    const std::string& file = item.key();
    for (const ZipEntry& e : entries)
      if (e.name == file) hash_capture_array(content, std::string_view(file).substr(0, file.size() >= 4 ? file.size() - 4 : 0), e.data);
  }
  m["content_sha256"] = content.finish_hex();
  manifest->data = m.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace hipstudio::captures
