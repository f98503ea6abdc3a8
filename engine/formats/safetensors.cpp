#include "engine/formats/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "engine/formats/errors.h"

namespace hipstudio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Real headers are a few hundred KB even for 100B-parameter models; anything bigger is corruption.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;
constexpr const char* kRedownload = "re-download or re-convert the file";

[[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& fix) {
  throw InputError(path + ": " + problem + "; " + fix);
}

// numel of a shape, or nullopt when it does not fit in int64.
std::optional<int64_t> checked_numel(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && numel > std::numeric_limits<int64_t>::max() / dim) return std::nullopt;
    numel *= dim;
  }
  return numel;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Parses one header entry into `info` (data left null); `data_bytes` is the data section's size.
void parse_entry(const std::string& path, const std::string& name, const json& entry, uint64_t data_bytes,
                 TensorInfo& info, uint64_t& begin) {
  const std::string where = "tensor '" + name + "'";
  if (!entry.is_object()) fail(path, where + " is not a JSON object in the header", kRedownload);
  const auto dtype_it = entry.find("dtype");
  const auto shape_it = entry.find("shape");
  const auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || shape_it == entry.end() || offsets_it == entry.end())
    fail(path, where + " lacks one of \"dtype\", \"shape\", \"data_offsets\"", kRedownload);

  if (!dtype_it->is_string()) fail(path, where + " has a dtype that is not a string", kRedownload);
  const std::string dtype_name_str = dtype_it->get<std::string>();
  const std::optional<StoredDType> dtype = dtype_from_name(dtype_name_str);
  if (!dtype)
    fail(path, where + " has unsupported dtype '" + dtype_name_str + "'",
         std::string("supported dtypes are ") + supported_dtype_names() + "; convert the weights to one of them");

  if (!shape_it->is_array()) fail(path, where + " has a shape that is not an array", kRedownload);
  info.shape.clear();
  for (const json& dim : *shape_it) {
    if (!dim.is_number_integer()) fail(path, where + " has a shape entry that is not an integer", kRedownload);
    if (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<int64_t>() < 0)
      fail(path, where + " has a negative shape entry " + std::to_string(dim.get<int64_t>()), kRedownload);
    if (dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(path, where + " has an absurd shape entry", kRedownload);
    info.shape.push_back(dim.get<int64_t>());
  }

  if (!offsets_it->is_array() || offsets_it->size() != 2 || !(*offsets_it)[0].is_number_unsigned() ||
      !(*offsets_it)[1].is_number_unsigned())
    fail(path, where + " has data_offsets that are not two non-negative integers [begin, end]", kRedownload);
  begin = (*offsets_it)[0].get<uint64_t>();
  const uint64_t end = (*offsets_it)[1].get<uint64_t>();
  if (end < begin)
    fail(path, where + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                   "] that are not increasing", kRedownload);
  if (end > data_bytes)
    fail(path, where + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                   "] outside the data section of " + std::to_string(data_bytes) + " bytes (file truncated?)",
         kRedownload);

  const std::optional<int64_t> numel = checked_numel(info.shape);
  const uint64_t element = dtype_size(*dtype);
  if (!numel || static_cast<uint64_t>(*numel) > std::numeric_limits<uint64_t>::max() / element ||
      static_cast<uint64_t>(*numel) * element != end - begin)
    fail(path, where + " has " + std::to_string(end - begin) + " bytes of data but shape " +
                   shape_string(info.shape) + " of " + dtype_name_str + " needs " +
                   (numel ? std::to_string(static_cast<uint64_t>(*numel) * element) : std::string("too many")),
         kRedownload);
  info.name = name;
  info.dtype = *dtype;
  info.nbytes = end - begin;
}

// Closes a descriptor on every path out of the constructor.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")", "check the path and permissions");
  FdGuard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, std::string("cannot stat (") + std::strerror(errno) + ")", "check the file");
  if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file", "pass a .safetensors file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8)
    fail(path, "is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length of a safetensors file",
         kRedownload);

  map_ = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail(path, std::string("cannot memory-map (") + std::strerror(errno) + ")", "check the file and free memory");
  }
  map_size_ = file_size;
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | bytes[i];  // little-endian
    if (header_bytes > kMaxHeaderBytes)
      fail(path, "header length " + std::to_string(header_bytes) + " bytes is absurd (over 100 MB)",
           "this is not a safetensors file or it is corrupt; " + std::string(kRedownload));
    if (header_bytes > file_size - 8)
      fail(path, "header length " + std::to_string(header_bytes) + " bytes is larger than the file (" +
                     std::to_string(file_size) + " bytes)",
           "the file is truncated or not a safetensors file; " + std::string(kRedownload));
    const uint64_t data_bytes = file_size - 8 - header_bytes;
    const char* header_begin = reinterpret_cast<const char*>(bytes + 8);

    json header;
    try {
      header = json::parse(header_begin, header_begin + header_bytes);
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
      fail(path, std::string("header is not valid JSON (") + e.what() + ")", kRedownload);
    }
    if (!header.is_object()) fail(path, "header is not a JSON object", kRedownload);

    std::vector<uint64_t> begins;
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        if (!it->is_object()) fail(path, "__metadata__ is not a JSON object", kRedownload);
        for (auto m = it->begin(); m != it->end(); ++m) {
          if (!m->is_string())
            fail(path, "__metadata__ entry '" + m.key() + "' is not a string", "metadata values must be strings");
          metadata_[m.key()] = m->get<std::string>();
        }
        continue;
      }
      TensorInfo info;
      uint64_t begin = 0;
      parse_entry(path, it.key(), *it, data_bytes, info, begin);
      info.data = bytes + 8 + header_bytes + begin;
      tensors_.push_back(std::move(info));
      begins.push_back(begin);
    }

    // Sort by offset and check that no two tensors share bytes (holes between them are allowed).
    std::vector<size_t> order(tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return begins[a] != begins[b] ? begins[a] < begins[b] : tensors_[a].nbytes < tensors_[b].nbytes;
    });
    std::vector<TensorInfo> sorted;
    sorted.reserve(tensors_.size());
    const TensorInfo* previous = nullptr;
    uint64_t previous_end = 0;
    for (size_t i : order) {
      if (previous && tensors_[i].nbytes > 0 && begins[i] < previous_end)
        fail(path, "tensors '" + previous->name + "' and '" + tensors_[i].name + "' overlap in the data section",
             kRedownload);
      if (tensors_[i].nbytes > 0) {
        previous = &tensors_[i];
        previous_end = begins[i] + tensors_[i].nbytes;
      }
    }
    for (size_t i : order) sorted.push_back(std::move(tensors_[i]));
    tensors_ = std::move(sorted);
    for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  } catch (...) {
    unmap();
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() { unmap(); }

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      tensors_(std::move(other.tensors_)),
      index_(std::move(other.index_)),
      metadata_(std::move(other.metadata_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    tensors_ = std::move(other.tensors_);
    index_ = std::move(other.index_);
    metadata_ = std::move(other.metadata_);
  }
  return *this;
}

void SafetensorsFile::unmap() {
  if (map_) ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsFile::get(std::string_view name) const {
  if (const TensorInfo* info = find(name)) return *info;
  throw InputError(path_ + ": missing tensor '" + std::string(name) +
                   "'; the file does not hold the weights this model expects (wrong file or architecture?)");
}

// ---- SafetensorsModel ---------------------------------------------------------------------------

namespace {

json read_json_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) fail(path, std::string("cannot open (") + std::strerror(errno) + ")", "check the path and permissions");
  std::string text;
  char buffer[65536];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, got);
  std::fclose(file);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    fail(path, std::string("is not valid JSON (") + e.what() + ")", kRedownload);
  }
}

// Whether `shard` (a weight_map value) names a file inside `folder`: relative, no '..', and not a
// link that resolves elsewhere. An index must not make the loader read files outside the model.
bool shard_inside_folder(const fs::path& folder, const std::string& shard) {
  const fs::path rel(shard);
  if (shard.empty() || rel.has_root_path() || rel.is_absolute()) return false;
  for (const fs::path& part : rel)
    if (part == "..") return false;
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(folder, ec);
  if (ec) return false;
  const fs::path resolved = fs::weakly_canonical(folder / rel, ec);
  if (ec) return false;
  auto [b, r] = std::mismatch(base.begin(), base.end(), resolved.begin(), resolved.end());
  return b == base.end() && r != resolved.end();
}

}  // namespace

SafetensorsModel::SafetensorsModel(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  const fs::path given(dir);
  fs::path index_path, single_path;
  if (fs::is_directory(given, ec)) {
    if (fs::is_regular_file(given / "model.safetensors.index.json", ec)) {
      index_path = given / "model.safetensors.index.json";
    } else if (fs::is_regular_file(given / "model.safetensors", ec)) {
      single_path = given / "model.safetensors";
    } else {
      // Some exports name their only weight file differently (e.g. "pytorch_model.safetensors").
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(given, ec))
        if (entry.path().extension() == ".safetensors") found.push_back(entry.path());
      if (found.size() != 1)
        throw InputError(dir + ": no model.safetensors or model.safetensors.index.json here" +
                         (found.empty() ? std::string() : " (and " + std::to_string(found.size()) +
                                                              " other .safetensors files, so which to load is unclear)") +
                         "; point at the folder of a Hugging Face model that has safetensors weights");
      single_path = found[0];
    }
  } else if (fs::is_regular_file(given, ec)) {
    (given.extension() == ".json" ? index_path : single_path) = given;
  } else {
    throw InputError(dir + ": no such file or directory; pass a model folder holding model.safetensors");
  }

  if (!single_path.empty()) {
    shards_.emplace_back(single_path.string());
    for (const TensorInfo& info : shards_[0].tensors()) index_.emplace(info.name, &info);
    return;
  }

  const std::string index_name = index_path.string();
  const json index = read_json_file(index_name);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    fail(index_name, "has no \"weight_map\" object", kRedownload);
  const json& weight_map = index["weight_map"];
  std::map<std::string, size_t> shard_of_file;   // shard file name -> position in shards_
  for (auto it = weight_map.begin(); it != weight_map.end(); ++it) {
    if (!it->is_string()) fail(index_name, "weight_map entry '" + it.key() + "' is not a file name", kRedownload);
    const std::string shard = it->get<std::string>();
    if (shard_of_file.count(shard)) continue;
    const fs::path shard_path = index_path.parent_path() / shard;
    if (!shard_inside_folder(index_path.parent_path(), shard))
      fail(index_name, "maps tensor '" + it.key() + "' to shard '" + shard + "', which lies outside the model folder",
           "shards must be files in the folder of the index (no absolute paths, '..' or links out of it); "
           "fix the index or take it from the model's download");
    if (!fs::is_regular_file(shard_path, ec))
      fail(index_name, "maps tensor '" + it.key() + "' to shard '" + shard + "', which is missing (" +
                           shard_path.string() + ")",
           "download every shard listed in the index");
    shard_of_file.emplace(shard, shard_of_file.size());
  }
  // Every shard is opened before pointers into it are taken (moves keep TensorInfo addresses anyway).
  shards_.reserve(shard_of_file.size());
  std::vector<std::string> ordered(shard_of_file.size());
  for (const auto& [file, position] : shard_of_file) ordered[position] = file;
  for (const std::string& file : ordered) shards_.emplace_back((index_path.parent_path() / file).string());
  for (auto it = weight_map.begin(); it != weight_map.end(); ++it) {
    const SafetensorsFile& shard = shards_[shard_of_file.at(it->get<std::string>())];
    const TensorInfo* info = shard.find(it.key());
    if (!info)
      fail(index_name, "maps tensor '" + it.key() + "' to " + shard.path() + ", which does not contain it",
           "the index and the shards come from different downloads; " + std::string(kRedownload));
    index_.emplace(it.key(), info);
  }
}

const TensorInfo* SafetensorsModel::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

const TensorInfo& SafetensorsModel::get(std::string_view name) const {
  if (const TensorInfo* info = find(name)) return *info;
  throw InputError(dir_ + ": missing tensor '" + std::string(name) +
                   "' in the model's safetensors weights; the model's architecture does not match what "
                   "config.json says, or the weights are incomplete");
}

std::vector<std::string> SafetensorsModel::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, info] : index_) out.push_back(name);
  return out;
}

// ---- writing --------------------------------------------------------------------------------------

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Like the reference writer: order by element size (largest first) then name, so every tensor
  // starts aligned to its element size with no holes (the Python library rejects holes).
  std::vector<const TensorToWrite*> order;
  std::set<std::string> seen;
  for (const TensorToWrite& tensor : tensors) {
    if (tensor.name.empty() || tensor.name == "__metadata__")
      throw InputError(path + ": cannot write a tensor named '" + tensor.name + "'; give it a real name");
    if (!seen.insert(tensor.name).second)
      throw InputError(path + ": tensor '" + tensor.name + "' is written twice; names must be unique");
    for (int64_t dim : tensor.shape)
      if (dim < 0) throw InputError(path + ": tensor '" + tensor.name + "' has a negative dimension");
    order.push_back(&tensor);
  }
  std::stable_sort(order.begin(), order.end(), [](const TensorToWrite* a, const TensorToWrite* b) {
    const size_t sa = dtype_size(a->dtype), sb = dtype_size(b->dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const TensorToWrite* tensor : order) {
    const std::optional<int64_t> numel = checked_numel(tensor->shape);
    if (!numel || static_cast<uint64_t>(*numel) > std::numeric_limits<uint64_t>::max() / dtype_size(tensor->dtype))
      throw InputError(path + ": tensor '" + tensor->name + "' has a shape too large to store");
    const uint64_t nbytes = static_cast<uint64_t>(*numel) * dtype_size(tensor->dtype);
    if (nbytes > 0 && !tensor->data)
      throw InputError(path + ": tensor '" + tensor->name + "' has no data pointer");
    header[tensor->name] = {{"dtype", dtype_name(tensor->dtype)},
                            {"shape", tensor->shape},
                            {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    sizes.push_back(nbytes);
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // data section starts 8-byte aligned

  const std::string tmp = path + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (!file) fail(tmp, std::string("cannot create (") + std::strerror(errno) + ")", "check the folder exists and is writable");
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  bool ok = std::fwrite(length, 1, 8, file) == 8 && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  for (size_t i = 0; ok && i < order.size(); ++i)
    ok = sizes[i] == 0 || std::fwrite(order[i]->data, 1, sizes[i], file) == sizes[i];
  ok = std::fflush(file) == 0 && ok;
  ok = ::fsync(::fileno(file)) == 0 && ok;
  const int saved_errno = errno;
  ok = std::fclose(file) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    fail(path, std::string("cannot write (") + std::strerror(saved_errno) + ")", "check free disk space");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    fail(path, std::string("cannot rename the finished file into place (") + std::strerror(rename_errno) + ")",
         "check permissions on the folder");
  }
}

}  // namespace hipstudio
