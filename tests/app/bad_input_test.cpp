// Bad input, second round, against the real binary: outputs that are devices, FIFOs or links are
// written, never replaced; out-of-range numbers are refused with the range; messages point the
// right way; non-finite .npy data is refused; edited captures are refused naming the field; export's
// format and --out's extension agree. Devices and FIFOs are made only inside a temporary folder.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "captures/content_hash.h"
#include "captures/npy.h"
#include "captures/zip_store.h"
#include "tests/app/cli_contract.h"
#include "tests/captures/capture_fixture.h"

namespace {

namespace fs = std::filesystem;
using hipstudio::testing::CommandResult;
using hipstudio::testing::expect_refused_early;
using hipstudio::testing::has;
using hipstudio::testing::read_bytes;
using hipstudio::testing::run_merged;
using hipstudio::testing::run_shell;
using hipstudio::testing::TempDir;
using hipstudio::testing::write_bytes;
using nlohmann::json;

const std::string kHip = " --topk 16 --bq 8 --bk 2 --ld 1 --rm 4";
const std::string kBinary = HIPSTUDIO_BINARY;

mode_t kind_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

// Names in `dir` that a writer's temporary would leave ("*.tmp-*").
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

struct BadInputCapture {
  static constexpr const char* kFile = "run.hipcap";
  static std::string arguments() {
    return "capture --prompt 'Once upon a time, there was a little girl named Lily.'" + kHip +
           " --decode 3 --views mask,locality,cache,latency --no-images";
  }
};
class BadInput : public hipstudio::testing::OneCaptureSuite<BadInputCapture> {};

// Item 1: a FIFO and a character device are written in place, a link stays a link and the file it
// names is replaced atomically (its temporary beside it), a link to a pipe writes to the pipe.
TEST_F(BadInput, OutputsThatAreDevicesFifosOrLinksAreWrittenNeverReplaced) {
  TempDir tmp;
  const std::string fifo = tmp.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const std::string& command : {"export " + capture_ + " --what latency --format csv --out " + fifo,
                                     "report " + capture_ + " --out " + fifo, "report " + capture_ + " --out " +
                                     tmp.file("r.html") + " --json " + fifo}) {
    const CommandResult r = run_shell("cat " + fifo + " > " + tmp.file("got") + " & " + kBinary + " " + command +
                                      "; s=$?; wait; exit $s");
    EXPECT_EQ(r.status, 0) << command << "\n" << r.out;
    EXPECT_EQ(kind_of(fifo), static_cast<mode_t>(S_IFIFO)) << command << ": the FIFO was replaced";
    EXPECT_GT(read_bytes(tmp.file("got")).size(), 10u) << command << ": nothing came through the FIFO";
  }

  // A character device made here (the memory driver's null, 1:3), never the system's /dev/null.
  const std::string device = tmp.file("null");
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    std::printf("note: mknod failed here (not root?): the character-device case is skipped\n");
  } else {
    for (const std::string& command : {"analyze --prompt 'Once upon a time'" + kHip + " -q --json " + device,
                                       "export " + capture_ + " --what mask --format png --out " + device,
                                       "capture --prompt 'Once upon a time'" + kHip + " -q --views latency --out " + device}) {
      const CommandResult r = run_merged(command);
      EXPECT_EQ(r.status, 0) << command << "\n" << r.out;
      EXPECT_EQ(kind_of(device), static_cast<mode_t>(S_IFCHR)) << command << ": the device was replaced";
    }
  }

  // A link to a regular file in another folder: the link stays, the file changes, no temporary is left
  // beside either.
  fs::create_directory(tmp.file("elsewhere"));
  const std::string target = tmp.file("elsewhere/target.json"), link = tmp.file("link.json");
  write_bytes(target, "old");
  ::chmod(target.c_str(), 0640);
  fs::create_symlink(target, link);
  CommandResult r = run_merged("report " + capture_ + " --out " + tmp.file("r2.html") + " --json " + link);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(kind_of(link), static_cast<mode_t>(S_IFLNK));
  EXPECT_TRUE(has(read_bytes(target), "\"schema\"")) << "the file the link names was not written";
  EXPECT_EQ(fs::status(target).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read)
      << "a replaced file keeps its permission bits";
  EXPECT_TRUE(leftovers(tmp.path()).empty() && leftovers(tmp.file("elsewhere")).empty());

  // A dangling relative link: the file it names is created, the link stays.
  fs::create_symlink("new.csv", tmp.file("dangling.csv"));
  r = run_merged("export " + capture_ + " --what latency --out " + tmp.file("dangling.csv"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(kind_of(tmp.file("dangling.csv")), static_cast<mode_t>(S_IFLNK));
  EXPECT_TRUE(fs::is_regular_file(tmp.file("new.csv")));

  // A link to this process' stdout (a pipe here): written through, the link stays.
  fs::create_symlink("/proc/self/fd/1", tmp.file("stdout-link"));
  r = run_merged("export " + capture_ + " --what latency --format csv --out " + tmp.file("stdout-link"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, ",")) << "the CSV did not reach stdout: " << r.out;
  EXPECT_EQ(kind_of(tmp.file("stdout-link")), static_cast<mode_t>(S_IFLNK));

  // mask --out: a FIFO inside the folder is written in place; a failed run removes only what it created.
  const std::vector<float> q(2 * 32 * 8, 0.5f);
  hipstudio::captures::write_npy(tmp.file("q.npy"), {2, 32, 8}, q);
  fs::create_directory(tmp.file("masks"));
  ASSERT_EQ(::mkfifo(tmp.file("masks/metrics.json").c_str(), 0644), 0);
  r = run_shell("cat " + tmp.file("masks/metrics.json") + " > " + tmp.file("metrics.got") + " & " + kBinary + " mask --q " +
                tmp.file("q.npy") + " --k " + tmp.file("q.npy") + " --topk 8 --bq 4 --bk 2 --out " + tmp.file("masks") +
                "; s=$?; wait; exit $s");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(kind_of(tmp.file("masks/metrics.json")), static_cast<mode_t>(S_IFIFO));
  EXPECT_TRUE(has(read_bytes(tmp.file("metrics.got")), "\"recall\""));

  // A socket or a folder behind a link is refused before any work.
  fs::create_symlink(tmp.file("elsewhere"), tmp.file("folder-link"));
  expect_refused_early("export " + capture_ + " --what latency --format csv --out " + tmp.file("folder-link"), {"is a folder"});
}

// Item 2: numbers out of range are refused with the range; nothing is clamped.
TEST_F(BadInput, OutOfRangeValuesAreRefusedWithTheRange) {
  const std::string uint64_range = "give a value from 0 to 18446744073709551615";
  for (const std::string seed : {"99999999999999999999", "18446744073709551616", "340282366920938463463374607431768211456", "-1"}) {
    expect_refused_early("generate --prompt hi --seed " + seed, {"--seed: " + seed + " is out of range", uint64_range});
    expect_refused_early("analyze --prompt hi --json /tmp/never.json --seed " + seed, {"is out of range", uint64_range});
  }
  EXPECT_EQ(run_merged("generate --prompt hi --max-tokens 1 --seed 18446744073709551615").status, 0) << "2^64 - 1 is a seed";
  for (const std::string threads : {"4096", "2147483648", "99999999999999999999"}) {
    expect_refused_early("generate --prompt hi --threads " + threads, {"--threads: " + threads + " is out of range", "from 0 to"});
    expect_refused_early("bench mask --threads " + threads, {"is out of range"});
  }
  // --ld against the model (stories15M: 6 layers).
  for (const std::string ld : {"6", "100"}) {
    expect_refused_early("generate --prompt hi --attention hip --ld " + ld, {"--ld " + ld + " is out of range: give a value from 0 to 5", "6 full-attention layers"});
    expect_refused_early("analyze --prompt hi --json /tmp/never.json --ld " + ld, {"--ld " + ld, "from 0 to 5"});
    expect_refused_early("capture --prompt hi --out /tmp/never.hipcap --ld " + ld, {"--ld " + ld, "from 0 to 5"});
    expect_refused_early("bench model --ld " + ld, {"--ld " + ld, "from 0 to 5"});
  }
  expect_refused_early("bench generate --tokens 1000", {"--tokens asks for 1000 more", "the context is 256 tokens", "at most"});
  expect_refused_early("bench mask --tokens 16,100", {"--tokens 16 is out of range for --topk 512", "from 513"});
  // bench model's defaults work on the default model, and the adjusted --tokens is stated.
  const CommandResult bench = run_merged("bench model --warmup 0 --repeats 1 --decode 2");
  EXPECT_EQ(bench.status, 0) << bench.out;
  EXPECT_TRUE(has(bench.out, "note: --tokens defaults to 254 here")) << bench.out;
  EXPECT_TRUE(has(bench.out, "T = 254 prompt tokens")) << bench.out;
  expect_refused_early("bench model --tokens 4096", {"--tokens", "the context is 256 tokens"});
  EXPECT_FALSE(fs::exists("/tmp/never.json") || fs::exists("/tmp/never.hipcap"));
}

// Item 4: messages that name what the user gave and the fix.
TEST_F(BadInput, MessagesPointTheRightWay) {
  TempDir tmp;
  for (const std::string& bytes : {std::string(), std::string("garbage\xFF\x1b[31m")}) {
    write_bytes(tmp.file("tokenizer.json"), bytes);
    const CommandResult r = run_merged("generate --prompt hi --tokenizer " + tmp.file("tokenizer.json"));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_TRUE(has(r.out, "is not valid JSON")) << r.out;
    EXPECT_FALSE(has(r.out, "tokenizer.bin")) << r.out;
    EXPECT_FALSE(has(r.out, "\xFF") || has(r.out, "\x1b")) << "raw bytes echoed: " << r.out;
  }
  write_bytes(tmp.file("tokenizer.json"), R"({"model": {"type": "WordPiece", "vocab": {}}})");
  CommandResult r = run_merged("generate --prompt hi --tokenizer " + tmp.file("tokenizer.json"));
  EXPECT_TRUE(has(r.out, "model type \"WordPiece\" is not supported")) << r.out;
  EXPECT_FALSE(has(r.out, "'\"")) << r.out;
  // Bytes a file holds are escaped wherever a message quotes them.
  write_bytes(tmp.file("weird.json"), std::string("{\"model\": {\"type\": \"\xFF\x1b[31m\"}}"));
  r = run_merged("generate --prompt hi --tokenizer " + tmp.file("weird.json"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_FALSE(has(r.out, "\xFF") || has(r.out, "\x1b")) << "raw bytes echoed: " << r.out;
  // Paths as the user gave them, never a probe file's.
  expect_refused_early("report " + capture_ + " --csv-dir /proc/x", {"--csv-dir /proc/x"});
  r = run_merged("report " + capture_ + " --out /proc/x.html");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--out /proc/x.html")) << r.out;
  EXPECT_FALSE(has(r.out, "probe")) << r.out;
  EXPECT_FALSE(has(run_merged("report " + capture_ + " --csv-dir /proc/x").out, "probe"));
  expect_refused_early("generate --prompt hi --threads 2147483648", {"is out of range"});
  expect_refused_early("generate --prompt hi --seed -1", {"--seed: -1 is out of range"});
  r = run_merged("generate --prompt hi --max-tokens 2 --max-tokens 3");
  EXPECT_TRUE(has(r.out, "error: option --max-tokens given more than once")) << r.out;
  EXPECT_FALSE(has(r.out, "At Most")) << r.out;
  r = run_merged("generate --prompt hi --max-token 3");
  EXPECT_TRUE(r.out.rfind("error: unknown option --max-token (did you mean --max-tokens?)", 0) == 0) << r.out;
}

// Item 3, the .npy half: NaN or Inf in a tensor `mask` reads is refused, naming the file, the array
// and the first bad index; nothing is written.
TEST_F(BadInput, NonFiniteNpyIsRefused) {
  TempDir tmp;
  std::vector<float> q(2 * 32 * 8, 0.25f), k(q);
  hipstudio::captures::write_npy(tmp.file("q.npy"), {2, 32, 8}, q);
  k[1 * 32 * 8 + 5 * 8 + 3] = std::nanf("");
  hipstudio::captures::write_npy(tmp.file("k.npy"), {2, 32, 8}, k);
  const std::string base = "mask --topk 8 --bq 4 --bk 2 --out " + tmp.file("out") + " --q " + tmp.file("q.npy");
  expect_refused_early(base + " --k " + tmp.file("k.npy"), {"--k " + tmp.file("k.npy") + " (k)", "NaN at index [1, 5, 3]", "finite"});
  k[1 * 32 * 8 + 5 * 8 + 3] = 0;
  k[7] = -INFINITY;
  hipstudio::captures::write_npy(tmp.file("k.npy"), {2, 32, 8}, k);
  expect_refused_early(base + " --k " + tmp.file("k.npy"), {"-Inf at index [0, 0, 7]"});
  expect_refused_early(base + " --k " + tmp.file("q.npy") + " --v " + tmp.file("k.npy"), {"--v", "(v)", "-Inf at index [0, 0, 7]"});
  EXPECT_FALSE(fs::exists(tmp.file("out")));
}

// Item 5: a capture edited consistently (CRCs and content hash recomputed) but inconsistent in
// itself is refused by `open`, `report` and `export`, naming the field.
using hipstudio::testing::edited_capture;

TEST_F(BadInput, InconsistentCapturesAreRefusedNamingTheField) {
  using hipstudio::captures::NpyArray;
  TempDir tmp;
  const std::string good = read_bytes(capture_);
  const std::string bad = tmp.file("bad.hipcap");
  auto expect_refused = [&](const std::string& bytes, const std::string& field) {
    write_bytes(bad, bytes);
    for (const std::string& command : {"open --print " + bad, "report " + bad + " --out " + tmp.file("r.html"),
                                       "export " + bad + " --what latency --out " + tmp.file("l.csv")}) {
      const CommandResult r = run_merged(command);
      EXPECT_EQ(r.status, 2) << field << ": " << command << "\n" << r.out;
      EXPECT_TRUE(has(r.out, "error: ") && has(r.out, "field '" + field + "'")) << field << ": " << r.out;
    }
    EXPECT_FALSE(fs::exists(tmp.file("r.html")) || fs::exists(tmp.file("l.csv")));
  };
  // Unedited, it opens.
  write_bytes(bad, edited_capture(good, [](json&) {}));
  EXPECT_EQ(run_merged("open --print " + bad).status, 0);

  expect_refused(edited_capture(good, [](json& m) { m["analysis"]["params"]["k"] = 32; }), "analysis.params.k");
  expect_refused(edited_capture(good, [](json& m) { m["analysis"]["kl"] = 1.5; }), "analysis.kl");
  expect_refused(edited_capture(good, [](json& m) { m["params"]["l_d"] = 7; }), "params.l_d");
  expect_refused(edited_capture(good, [](json& m) { m["params"]["r_m"] = 0; }), "params.r_m");
  expect_refused(edited_capture(good, [](json& m) { m["params"]["decode_steps"] = 5; }), "params.decode_steps");
  expect_refused(edited_capture(good, [](json& m) { m["mask_refreshes"] = 0; }), "mask_refreshes");
  expect_refused(edited_capture(good, [](json& m) { m["access"]["first_layer"] = 0; m["offload"]["first_layer"] = 0; }), "access.first_layer");
  expect_refused(edited_capture(good, {}, "masks/L3/hip/dense_from", [](NpyArray& a) { reinterpret_cast<int64_t*>(a.bytes.data())[0] = -8; }),
                 "masks/L3/hip/dense_from");
  expect_refused(edited_capture(good, {}, "locality/L3/counts", [](NpyArray& a) { reinterpret_cast<int64_t*>(a.bytes.data())[0] = -2; }),
                 "locality/L3/counts");
  expect_refused(edited_capture(good, {}, "offload/mask/total", [](NpyArray& a) { reinterpret_cast<int64_t*>(a.bytes.data())[1] += 1; }),
                 "offload/mask/total");
  expect_refused(edited_capture(good, {}, "analysis/layers", [](NpyArray& a) { reinterpret_cast<int64_t*>(a.bytes.data())[3] = 1; }),
                 "analysis/layers");  // layer 1 marked dense with l_d = 1
  expect_refused(edited_capture(good, {}, "analysis/decode", [](NpyArray& a) { reinterpret_cast<int64_t*>(a.bytes.data())[1] = 99; }),
                 "analysis/decode");
  // The stored Q/K/V are checked by the commands that read them (report --npy-dir, the GUI; open
  // --print and the figures leave them unread).
  write_bytes(bad, edited_capture(good, {}, "inputs/L2/k", [](NpyArray& a) { reinterpret_cast<float*>(a.bytes.data())[3] = NAN; }));
  const CommandResult r = run_merged("report " + bad + " --out " + tmp.file("r.html") + " --npy-dir " + tmp.file("npy"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "array 'inputs/L2/k'") && has(r.out, "NaN at index [0, 0, 3]")) << r.out;
  EXPECT_EQ(run_merged("open --print " + bad).status, 0);
}

// Item 5, export: PNG bytes never go under an .svg name; the format can come from the name.
TEST_F(BadInput, ExportFormatAndExtensionAgree) {
  TempDir tmp;
  expect_refused_early("export " + capture_ + " --what mask --format png --out " + tmp.file("x.svg"),
                       {"--out " + tmp.file("x.svg") + " ends in .svg but --format is png", tmp.file("x.png"), "--format svg"});
  EXPECT_FALSE(fs::exists(tmp.file("x.svg")));
  CommandResult r = run_merged("export " + capture_ + " --what mask --out " + tmp.file("x.PNG"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_bytes(tmp.file("x.PNG")).substr(1, 3), "PNG");
  expect_refused_early("export " + capture_ + " --what mask --out " + tmp.file("x.bin"), {"--format is required"});
  r = run_merged("export " + capture_ + " --what mask --format png --out " + tmp.file("x.bin"));
  EXPECT_EQ(r.status, 0) << r.out;
}

}  // namespace
