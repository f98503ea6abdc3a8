#pragma once
// A capture's content_sha256, the one rule the writer, the reader and the tools that edit a
// capture's entries (tests, the fuzzer's mutator) share: over each array listed in the manifest, in
// the manifest's (sorted) key order, its name without ".npy", a NUL and the entry's bytes.
#include <string_view>
#include <vector>

#include "captures/sha256.h"
#include "captures/zip_store.h"

namespace hipstudio::captures {

// One array's part of the hash (name without ".npy").
void hash_capture_array(Sha256& content, std::string_view name, std::string_view npy_bytes);

// Recomputes manifest.json's content_sha256 from the entries after they were edited; a missing or
// unparsable manifest is left as it is (the reader then names what is wrong).
void rehash_capture_manifest(std::vector<ZipEntry>& entries);

}  // namespace hipstudio::captures
