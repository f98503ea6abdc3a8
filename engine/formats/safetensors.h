#pragma once
// Safetensors weight files (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {str: str}}, then the data section that the offsets index into.
// Files are memory-mapped read-only and fully validated on open, so a TensorInfo's data pointer is
// always safe to read for nbytes bytes while its file object lives.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/formats/dtype.h"

namespace hipstudio {

// One tensor of a safetensors file; data points into the file's mapping.
struct TensorInfo {
  std::string name;
  StoredDType dtype = StoredDType::F32;
  std::vector<int64_t> shape;   // row-major; {} is a scalar (numel 1)
  const void* data = nullptr;   // nbytes = numel() * dtype_size(dtype) bytes, read-only
  uint64_t nbytes = 0;
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates the file; throws InputError naming the file, the problem and the fix.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }   // in data-offset order
  const TensorInfo* find(std::string_view name) const;   // nullptr when absent
  const TensorInfo& get(std::string_view name) const;    // throws InputError "<file>: missing tensor '<name>'"
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"

 private:
  void unmap();

  std::string path_;
  void* map_ = nullptr;     // whole file, PROT_READ
  size_t map_size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;   // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// A model's weights in one file (model.safetensors) or sharded with model.safetensors.index.json
// ({"weight_map": {tensor name: shard file name}}). Every shard is opened and validated up front.
class SafetensorsModel {
 public:
  // dir may also name a .safetensors file or an index .json file directly.
  explicit SafetensorsModel(const std::string& dir);
  const std::string& dir() const { return dir_; }
  const TensorInfo* find(std::string_view name) const;
  const TensorInfo& get(std::string_view name) const;  // error names the tensor and the directory
  std::vector<std::string> names() const;              // sorted
  const std::vector<SafetensorsFile>& shards() const { return shards_; }

 private:
  std::string dir_;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, const TensorInfo*, std::less<>> index_;   // points into shards_ (stable: not resized after load)
};

struct TensorToWrite {
  std::string name;
  StoredDType dtype = StoredDType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;   // numel(shape) * dtype_size(dtype) bytes
};

// Writes tensors in the given order (data 8-byte aligned like the reference writer). Atomic: writes
// <path>.tmp then renames; a failure leaves any earlier file untouched and throws InputError.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace hipstudio
