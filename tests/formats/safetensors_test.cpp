// Safetensors: write/read round trips, every malformed-header case, sharded models.
#include "engine/formats/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

#include "engine/formats/errors.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

// A safetensors file from a raw header string and a data section of `data_bytes` zero bytes.
std::string raw_file(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + std::string(data_bytes, '\0');
}

// Opening `bytes` must throw InputError whose message names the file and contains `problem`.
void expect_open_error(const TempDir& dir, const std::string& bytes, const std::string& problem) {
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, bytes);
  try {
    SafetensorsFile file(path);
    ADD_FAILURE() << "no error for a file that should give: " << problem;
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(problem), std::string::npos) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
  }
}

TEST(Safetensors, RoundTripDtypes) {
  TempDir dir;
  const std::vector<float> f32 = {1.5f, -2.25f, 3e-8f, 65504.f, 0.f, -0.f};
  std::vector<uint16_t> f16, bf16;
  for (float x : f32) {
    f16.push_back(float_to_f16(x));
    bf16.push_back(float_to_bf16(x));
  }
  const std::vector<int64_t> i64 = {-(int64_t{1} << 62), -1, 0, 7, int64_t{1} << 40};
  const int8_t scalar = -5;
  const std::vector<TensorToWrite> tensors = {
      {"f16.weight", StoredDType::F16, {2, 3}, f16.data()},   // odd byte count first: writer must still align
      {"model.f32", StoredDType::F32, {3, 2}, f32.data()},
      {"bf16", StoredDType::BF16, {6}, bf16.data()},
      {"ids", StoredDType::I64, {5, 1}, i64.data()},
      {"scalar", StoredDType::I8, {}, &scalar},
      {"empty", StoredDType::F32, {0, 4}, nullptr},
  };
  const std::string path = dir.file("model.safetensors");
  write_safetensors(path, tensors, {{"format", "pt"}, {"note", "héllo"}});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  SafetensorsFile file(path);
  EXPECT_EQ(file.path(), path);
  ASSERT_EQ(file.tensors().size(), tensors.size());
  for (const TensorToWrite& want : tensors) {
    const TensorInfo& got = file.get(want.name);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.dtype, want.dtype) << want.name;
    EXPECT_EQ(got.shape, want.shape) << want.name;
    EXPECT_EQ(got.nbytes, static_cast<uint64_t>(got.numel()) * dtype_size(want.dtype));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got.data) % dtype_size(want.dtype), 0u) << want.name << " misaligned";
    if (got.nbytes) {
      EXPECT_EQ(std::memcmp(got.data, want.data, got.nbytes), 0) << want.name;
    }
  }
  EXPECT_EQ(file.get("scalar").numel(), 1);
  EXPECT_EQ(file.get("empty").numel(), 0);
  EXPECT_EQ(file.metadata().at("note"), "héllo");
  EXPECT_EQ(file.find("absent"), nullptr);

  // The Python library rejects holes and trailing bytes: the data section must be covered exactly,
  // in offset order, and the data must start 8-byte aligned.
  const std::string bytes = read_bytes(path);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + header_len) % 8, 0u);
  const auto header = nlohmann::json::parse(bytes.substr(8, header_len));
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it)
    if (it.key() != "__metadata__") ranges.emplace_back(it.value()["data_offsets"][0], it.value()["data_offsets"][1]);
  std::sort(ranges.begin(), ranges.end());
  uint64_t expect_begin = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, expect_begin);
    expect_begin = end;
  }
  EXPECT_EQ(expect_begin, bytes.size() - 8 - header_len);
}

TEST(Safetensors, MoveKeepsMappingAlive) {
  TempDir dir;
  const std::vector<float> values = {1, 2, 3, 4};
  write_safetensors(dir.file("a.safetensors"), {{"w", StoredDType::F32, {4}, values.data()}});
  SafetensorsFile first(dir.file("a.safetensors"));
  const void* data = first.get("w").data;
  SafetensorsFile second(std::move(first));
  std::vector<SafetensorsFile> files;
  files.push_back(std::move(second));
  EXPECT_EQ(files[0].get("w").data, data);
  EXPECT_EQ(static_cast<const float*>(files[0].get("w").data)[3], 4.0f);
}

TEST(Safetensors, MissingTensorNamesFileAndTensor) {
  TempDir dir;
  const float x = 1;
  write_safetensors(dir.file("a.safetensors"), {{"w", StoredDType::F32, {1}, &x}});
  SafetensorsFile file(dir.file("a.safetensors"));
  try {
    file.get("layers.0.attn.q");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("a.safetensors") + ": missing tensor 'layers.0.attn.q'"),
              std::string::npos) << e.what();
  }
}

TEST(Safetensors, FailedWriteLeavesEarlierFile) {
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  const float old_value = 1, new_value = 2;
  write_safetensors(path, {{"w", StoredDType::F32, {1}, &old_value}});
  const std::string before = read_bytes(path);
  // A folder squatting on <path>.tmp makes the write fail before anything reaches `path`.
  std::filesystem::create_directory(path + ".tmp");
  EXPECT_THROW(write_safetensors(path, {{"w", StoredDType::F32, {1}, &new_value}}), InputError);
  EXPECT_EQ(read_bytes(path), before);
  std::filesystem::remove(path + ".tmp");
  EXPECT_THROW(write_safetensors(path, {{"w", StoredDType::F32, {1}, &new_value}, {"w", StoredDType::F32, {1}, &new_value}}),
               InputError);  // duplicate names
  EXPECT_EQ(read_bytes(path), before);
}

TEST(Safetensors, MalformedFiles) {
  TempDir dir;
  const auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape,
                        const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
  };
  expect_open_error(dir, "abcd", "shorter than the 8-byte");
  expect_open_error(dir, "", "shorter than the 8-byte");
  {
    std::string bytes = raw_file("{}", 0);
    bytes[0] = static_cast<char>(200);  // claims a 200-byte header in a 10-byte file
    expect_open_error(dir, bytes, "larger than the file");
    bytes[0] = 0;
    bytes[5] = 1;  // 2^40 bytes
    expect_open_error(dir, bytes, "absurd");
  }
  expect_open_error(dir, raw_file("{\"a\": [1, 2", 0), "not valid JSON");
  expect_open_error(dir, raw_file("[1, 2]", 0), "not a JSON object");
  expect_open_error(dir, raw_file("{" + entry("w", "F8_E4M3", "[2]", "[0,2]") + "}", 2), "unsupported dtype 'F8_E4M3'");
  expect_open_error(dir, raw_file("{" + entry("w", "F8_E4M3", "[2]", "[0,2]") + "}", 2), "BF16");  // lists supported
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[-1,2]", "[0,8]") + "}", 8), "negative shape");
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[1]", "[8,4]") + "}", 8), "not increasing");
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[1]", "[4]") + "}", 8), "two non-negative integers");
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[1]", "[\"0\",4]") + "}", 8), "two non-negative integers");
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[1]", "[-4,0]") + "}", 8), "two non-negative integers");
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[16]", "[0,64]") + "}", 16), "outside the data section");
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[3]", "[0,8]") + "}", 8), "needs 12");
  expect_open_error(dir, raw_file("{" + entry("w", "F32", "[4611686018427387904,4]", "[0,8]") + "}", 8),
                    "bytes of data but shape");  // numel overflows
  expect_open_error(dir, raw_file("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") + "}", 12),
                    "overlap");
  expect_open_error(dir, raw_file("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "I8", "[2]", "[0,2]") + "}", 12),
                    "overlap");
  expect_open_error(dir, raw_file("{\"w\": 3}", 0), "not a JSON object");
  expect_open_error(dir, raw_file("{\"w\": {\"dtype\": \"F32\"}}", 0), "lacks one of");
  expect_open_error(dir, raw_file("{\"__metadata__\": {\"a\": 1}}", 0), "not a string");

  // Holes between tensors are allowed, as is trailing header padding.
  const std::string path = dir.file("holes.safetensors");
  write_bytes(path, raw_file("{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[8,12]") + "}   ", 12));
  SafetensorsFile holes(path);
  EXPECT_EQ(holes.tensors().size(), 2u);
  EXPECT_EQ(holes.tensors()[1].name, "b");  // tensors() is in offset order
  EXPECT_THROW(SafetensorsFile(dir.file("does-not-exist.safetensors")), InputError);
}

// Writes a two-shard model: shard 1 holds a, b; shard 2 holds c.
void write_sharded(const TempDir& dir, const std::vector<float>& values) {
  write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                    {{"a", StoredDType::F32, {2}, values.data()}, {"b", StoredDType::F32, {1}, values.data() + 2}});
  write_safetensors(dir.file("model-00002-of-00002.safetensors"), {{"c", StoredDType::F32, {3}, values.data() + 3}});
  write_bytes(dir.file("model.safetensors.index.json"),
              R"({"metadata": {"total_size": 24}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                  "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
}

TEST(SafetensorsModel, ShardedRoundTrip) {
  TempDir dir;
  const std::vector<float> values = {0, 1, 2, 3, 4, 5};
  write_sharded(dir, values);
  SafetensorsModel model(dir.path().string());
  EXPECT_EQ(model.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(model.shards().size(), 2u);
  EXPECT_EQ(static_cast<const float*>(model.get("b").data)[0], 2.0f);
  EXPECT_EQ(static_cast<const float*>(model.get("c").data)[2], 5.0f);
  EXPECT_EQ(model.get("c").shape, std::vector<int64_t>{3});
  EXPECT_EQ(model.find("d"), nullptr);
  SafetensorsModel moved(std::move(model));  // pointers into the shards survive a move
  EXPECT_EQ(static_cast<const float*>(moved.get("a").data)[1], 1.0f);
  try {
    moved.get("lm_head.weight");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'lm_head.weight'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(dir.path().string()), std::string::npos);
  }
}

TEST(SafetensorsModel, SingleFile) {
  TempDir dir;
  const float x = 7;
  write_safetensors(dir.file("model.safetensors"), {{"w", StoredDType::F32, {1}, &x}});
  SafetensorsModel model(dir.path().string());
  EXPECT_EQ(model.names(), std::vector<std::string>{"w"});
  EXPECT_EQ(static_cast<const float*>(SafetensorsModel(dir.file("model.safetensors")).get("w").data)[0], 7.0f);
}

TEST(SafetensorsModel, IndexErrors) {
  const std::vector<float> values = {0, 1, 2, 3, 4, 5};
  {
    TempDir dir;
    write_sharded(dir, values);
    std::filesystem::remove(dir.file("model-00002-of-00002.safetensors"));
    try {
      SafetensorsModel model(dir.path().string());
      FAIL();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors', which is missing"), std::string::npos)
          << e.what();
    }
  }
  {
    TempDir dir;
    write_sharded(dir, values);
    write_bytes(dir.file("model.safetensors.index.json"),
                R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}})");
    try {
      SafetensorsModel model(dir.path().string());
      FAIL();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("'c'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("does not contain it"), std::string::npos) << e.what();
    }
  }
  {
    TempDir dir;
    write_bytes(dir.file("model.safetensors.index.json"), R"({"metadata": {}})");
    EXPECT_THROW(SafetensorsModel(dir.path().string()), InputError);
  }
  {
    TempDir dir;  // empty folder
    EXPECT_THROW(SafetensorsModel(dir.path().string()), InputError);
  }
}

}  // namespace
}  // namespace hipstudio
