// .npy reading and writing: round trips, numpy's exact layout, and every malformed file we reject.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "captures/npy.h"

namespace hipstudio::captures {
namespace {

namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "hipstudio-npy-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file(name);
  }
  fs::path dir_;
};

// A .npy image from its header text, padded the way numpy pads (to 64 bytes, '\n' last).
std::string image(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  const size_t total = ((prefix + header.size() + 1 + 63) / 64) * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  return out + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// Expects read_npy(path) to throw InputError mentioning the file and every needle.
void expect_rejected(const std::string& path, const std::vector<std::string>& needles) {
  try {
    read_npy(path);
    FAIL() << "accepted " << path;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

TEST_F(NpyTest, RoundTripsEveryDtypeAndRank) {
  const std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  const std::vector<double> d = {1.0 / 3.0, -2.5};
  const std::vector<int32_t> i = {-1, 2, 2147483647};
  const std::vector<int64_t> l = {-(int64_t{1} << 40), 7, 9, 11};
  write_npy(file("f.npy"), {2, 3}, f);
  write_npy(file("d.npy"), {2}, d);
  write_npy(file("i.npy"), {3, 1, 1}, i);
  write_npy(file("l.npy"), {4}, l);
  write_npy(file("scalar.npy"), {}, std::vector<double>{42.0});
  write_npy(file("empty.npy"), {0, 5}, std::vector<float>{});
  const NpyArray af = read_npy(file("f.npy"));
  EXPECT_EQ(af.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(af.data<float>(), af.data<float>() + 6), f);
  const NpyArray ad = read_npy(file("d.npy"));
  EXPECT_EQ(std::vector<double>(ad.data<double>(), ad.data<double>() + 2), d);
  const NpyArray ai = read_npy(file("i.npy"));
  EXPECT_EQ(ai.shape, (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(std::vector<int32_t>(ai.data<int32_t>(), ai.data<int32_t>() + 3), i);
  const NpyArray al = read_npy(file("l.npy"));
  EXPECT_EQ(std::vector<int64_t>(al.data<int64_t>(), al.data<int64_t>() + 4), l);
  const NpyArray as = read_npy(file("scalar.npy"));
  EXPECT_TRUE(as.shape.empty());
  EXPECT_EQ(as.numel(), 1);
  EXPECT_EQ(as.data<double>()[0], 42.0);
  const NpyArray ae = read_npy(file("empty.npy"));
  EXPECT_EQ(ae.shape, (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(ae.numel(), 0);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().extension(), ".npy") << "left behind: " << entry.path();
  }
}

TEST_F(NpyTest, WritesNumpysExactLayout) {
  // np.save of np.array([[0, 1, 2], [3, 4, 5]], dtype='<f4'): version 1.0, header length 118,
  // the dict below padded with spaces and a final newline so the data starts at byte 128.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string want = std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) + dict +
                     std::string(117 - dict.size(), ' ') + "\n" + floats({0, 1, 2, 3, 4, 5});
  const std::vector<float> v = {0, 1, 2, 3, 4, 5};
  const std::vector<unsigned char> got = encode_npy(NpyDType::F32, {2, 3}, v.data());
  EXPECT_EQ(std::string(got.begin(), got.end()), want);
  // A one-dimensional shape is written as a Python 1-tuple.
  const std::vector<unsigned char> one = encode_npy(NpyDType::I64, {3}, std::vector<int64_t>{1, 2, 3}.data());
  EXPECT_NE(std::string(one.begin(), one.end()).find("'shape': (3,), }"), std::string::npos);
}

TEST_F(NpyTest, ReadsTheHeaderVariantsNumpyWrites) {
  const std::string data = floats({1, 2});
  // Versions 2.0 and 3.0, double quotes, other key order, no trailing comma, Python 2 longs.
  for (const auto& [dict, major] : std::vector<std::pair<std::string, int>>{
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 2},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 3},
           {"{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<f4\"}", 1},
           {"{'descr':'<f4','fortran_order':False,'shape':(2L,)}", 1}}) {
    const NpyArray a = read_npy(write("v.npy", image(dict, data, major)));
    EXPECT_EQ(a.numel(), 2) << dict;
    EXPECT_EQ(a.data<float>()[1], 2.0f);
  }
}

TEST_F(NpyTest, RejectsBadMagic) {
  expect_rejected(write("magic.npy", "PK\x03\x04 this is a zip file"), {"not a NumPy .npy file"});
  expect_rejected(write("empty.npy", ""), {"not a NumPy .npy file"});
}

TEST_F(NpyTest, RejectsUnknownVersion) {
  std::string img = image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats({1}));
  img[6] = 4;
  expect_rejected(write("version.npy", img), {"version 4.0 is not supported"});
}

TEST_F(NpyTest, RejectsWrongDtype) {
  const std::string two(4, '\0');
  expect_rejected(write("i16.npy", image("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", two)),
                  {"dtype '<i2' is not supported", "float32 '<f4'"});
  expect_rejected(write("big.npy", image("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", two)),
                  {"big-endian", "newbyteorder"});
  expect_rejected(write("bool.npy", image("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", two)),
                  {"dtype '|b1' is not supported"});
  expect_rejected(
      write("struct.npy", image("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", two)),
      {"structured dtypes"});
  // A supported dtype that is not the one the caller needs.
  const NpyArray d = read_npy(write("f8.npy", image("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
                                                    std::string(8, '\0'))));
  try {
    d.data<float>();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected float32 ('<f4') but the file holds float64"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("astype(np.float32)"), std::string::npos) << e.what();
  }
}

TEST_F(NpyTest, RejectsFortranOrder) {
  expect_rejected(write("fortran.npy", image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                             floats({1, 2, 3, 4}))),
                  {"fortran_order arrays are not supported; save with np.ascontiguousarray"});
}

TEST_F(NpyTest, RejectsShapeLargerThanTheFile) {
  expect_rejected(write("short.npy", image("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
                                           floats({1, 2, 3}))),
                  {"[3, 4] needs 48 bytes", "holds 12", "truncated"});
  expect_rejected(write("huge.npy", image("{'descr': '<f8', 'fortran_order': False, 'shape': "
                                          "(4294967296, 4294967296), }",
                                          floats({1}))),
                  {"too large"});
}

TEST_F(NpyTest, RejectsDataBeyondTheShape) {
  expect_rejected(write("long.npy", image("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                          floats({1, 2, 3}))),
                  {"4 bytes after the [2] array"});
}

TEST_F(NpyTest, RejectsBrokenHeaders) {
  const std::string d = floats({1});
  expect_rejected(write("nokey.npy", image("{'descr': '<f4', 'shape': (1,), }", d)), {"lacks 'fortran_order'"});
  expect_rejected(write("extra.npy", image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", d)),
                  {"unexpected key 'x'"});
  expect_rejected(write("neg.npy", image("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", d)),
                  {"non-negative integers"});
  expect_rejected(write("syntax.npy", image("{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", d)),
                  {"malformed .npy header"});
  expect_rejected(write("bool.npy", image("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", d)),
                  {"True or False"});
  // Header length pointing past the end of the file.
  std::string img = image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", d);
  expect_rejected(write("cut.npy", img.substr(0, 40)), {"truncated"});
  img[8] = '\xff';
  img[9] = '\x7f';
  expect_rejected(write("len.npy", img), {"truncated"});
}

TEST_F(NpyTest, MissingFileAndUnwritablePathNameThePath) {
  expect_rejected(file("absent.npy"), {"cannot open"});
  const std::string bad = file("no-such-dir/out.npy");
  try {
    write_npy(bad, {1}, std::vector<float>{1.0f});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_npy(file("x.npy"), {2, 2}, std::vector<float>{1.0f}), InputError);  // 1 value for 4
}

TEST_F(NpyTest, RankCheckNamesTheShape) {
  const NpyArray a = read_npy(write("r.npy", image("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                                   floats({1, 2}))));
  try {
    a.require_rank(3, "[H, T, D]");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected 3 dimensions [H, T, D] but the array has shape [2]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hipstudio::captures
