// Capture files: round trip, every kind of damage, versions, atomic replacement.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <functional>
#include <typeinfo>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "captures/export_view.h"
#include "captures/figures.h"
#include "captures/npy.h"
#include "engine/analysis/layer_view.h"
#include "kernels/score_locality.h"
#include "captures/zip_store.h"
#include "engine/formats/dtype.h"
#include "engine/formats/errors.h"
#include "tests/captures/capture_fixture.h"

namespace hipstudio::captures {
namespace {
using hipstudio::testing::TempDir;
using hipstudio::testing::with_manifest;
using nlohmann::json;

const Capture& fixture() {
  static const Capture c = hipstudio::testing::synthetic_capture();
  return c;
}

// Expects decode to throw InputError whose message contains every one of `parts`.
void expect_rejected(const std::string& bytes, const std::vector<std::string>& parts) {
  try {
    decode_capture(bytes, "bad.hipcap");
    ADD_FAILURE() << "a damaged capture was accepted";
  } catch (const InputError& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// A capture's locality is the GUI panel's: the views layer's rows and Deltas (with the Delta on
// screen added), the float64 reference's statistics on them, so its figure is the one on screen.
TEST(CaptureFile, LocalityPoolsTheRowsAndDeltasOfTheLocalityPanel) {
  const int64_t tokens = 40;
  PairedAnalysis a = hipstudio::testing::synthetic_analysis(tokens);
  const PairedAnalysis kept = a;
  captures::CaptureInfo info;
  info.run = {"0.1.0", "synthetic", "llama", "cpu", "prompt"};
  info.dtype = "f32";
  captures::CaptureRequest request;
  request.views = {"locality"};
  request.render_images = false;
  request.locality_shown_deltas = {9};
  request.locality_bins = 30;
  const Capture c = build_capture(std::move(a), info, request, nullptr);
  const hip::LocalitySample sample = hip::locality_sample(tokens, 30, {9});
  EXPECT_EQ(c.locality_queries, sample.rows);
  EXPECT_EQ(c.locality_params.deltas, sample.params.deltas);
  EXPECT_EQ(c.locality_params.bins, 30);
  EXPECT_NE(std::find(c.locality_params.deltas.begin(), c.locality_params.deltas.end(), 9), c.locality_params.deltas.end());
  ASSERT_EQ(c.locality.size(), c.view_layers.size());
  const hip::AttentionInputs in = layer_view(*kept.find_inputs(c.view_layers[0]));
  const hip::ScoreLocality ref = hip::score_locality(in, kept.options.hip.hip, 1, sample.rows, sample.params);
  ASSERT_EQ(c.locality[0][1].deltas.size(), ref.deltas.size());
  for (size_t d = 0; d < ref.deltas.size(); ++d) {
    EXPECT_EQ(c.locality[0][1].deltas[d].counts, ref.deltas[d].counts) << d;
    EXPECT_EQ(c.locality[0][1].deltas[d].stddev, ref.deltas[d].stddev) << d;
  }
}

// The capture's locality pooled again under a rule other than the views layer's (the last 8 rows,
// Delta 1, 2, 4, ... 32), as an older capture holds it.
void pool_locality_under_an_older_rule(Capture& c) {
  const int64_t tokens = static_cast<int64_t>(c.analysis.prompt_ids.size());
  c.locality_queries.clear();
  for (int64_t i = tokens - 8; i < tokens; ++i) c.locality_queries.push_back(i);
  c.locality_params.deltas = {1, 2, 4, 8, 16, 32};
  c.locality.clear();
  for (int64_t l : c.view_layers) {
    const hip::AttentionInputs in = layer_view(*c.analysis.find_inputs(l));
    std::vector<hip::ScoreLocality> heads;
    for (int64_t h = 0; h < in.hq; ++h)
      heads.push_back(hip::score_locality(in, c.analysis.options.hip.hip, h, c.locality_queries, c.locality_params));
    c.locality.push_back(std::move(heads));
  }
}

// A capture stores the rows and Deltas it pooled: one written under another rule (the last 8 rows,
// Delta 1, 2, 4, ... 32) reads back with exactly those.
TEST(CaptureFile, LocalityOfAnotherRuleReadsBackAsStored) {
  Capture c = fixture();
  pool_locality_under_an_older_rule(c);
  const Capture back = decode_capture(encode_capture(c), "older.hipcap");
  EXPECT_EQ(back.locality_queries, c.locality_queries);
  EXPECT_EQ(back.locality_params.deltas, c.locality_params.deltas);
  ASSERT_EQ(back.locality.size(), c.locality.size());
  EXPECT_EQ(back.locality[1][0].deltas[5].counts, c.locality[1][0].deltas[5].counts);
  EXPECT_EQ(back.locality[1][0].queries, c.locality_queries);
}

// What such a capture's figures show is labelled: the views carry the rule note and the exported
// SVG says what was pooled; a capture under the one rule carries none.
TEST(CaptureFile, LocalityOfAnotherRuleIsLabelledInItsFigures) {
  Capture c = fixture();
  EXPECT_EQ(captured_locality_views(c, 1, -1).at(0).rule_note, "");
  pool_locality_under_an_older_rule(c);
  const Capture back = decode_capture(encode_capture(c), "older.hipcap");
  const std::vector<LocalityView> views = captured_locality_views(back, 1, 4);
  ASSERT_FALSE(views.empty());
  EXPECT_NE(views[0].rule_note.find("the last 8 rows"), std::string::npos) << views[0].rule_note;
  EXPECT_EQ(views[0].histogram.counts, back.locality[1][0].deltas[2].counts);  // read back as stored
  ExportRequest r;
  r.what = "locality", r.format = "svg", r.layer = back.view_layers[1];
  EXPECT_NE(export_view(back, r).find("pooled over the last 8 rows"), std::string::npos);
}

// Traces keep their oracle block scores, so a capture's iteration figure marks the oracle blocks by
// the GUI's rule; a capture written without them (older) still opens and takes them from its masks.
TEST(CaptureFile, TracesKeepTheirOracleScoresAndOlderOnesRead) {
  const Capture& c = fixture();
  ASSERT_FALSE(c.traces.empty());
  const Capture back = decode_capture(encode_capture(c), "mem");
  for (size_t i = 0; i < c.traces.size(); ++i) {
    const CapturedTrace& t = back.traces[i];
    EXPECT_EQ(t.oracle_scores, c.traces[i].oracle_scores);
    const hip::AttentionInputs in = layer_view(*c.analysis.find_inputs(t.layer));
    const BlockTraceView gui = reference_trace_view(in, c.analysis.options.hip.hip, t.layer, t.trace.head, t.trace.query_block);
    EXPECT_EQ(t.oracle_scores, gui.oracle_scores);
    EXPECT_EQ(captured_trace_view(back, t).oracle_blocks, gui.oracle_blocks);
  }
  Capture older = c;
  for (CapturedTrace& t : older.traces) t.oracle_scores.clear();
  const Capture read = decode_capture(encode_capture(older), "older.hipcap");
  for (size_t i = 0; i < read.traces.size(); ++i) {
    EXPECT_TRUE(read.traces[i].oracle_scores.empty());
    EXPECT_EQ(captured_trace_view(read, read.traces[i]).oracle_blocks, captured_trace_view(back, back.traces[i]).oracle_blocks);
  }
}

TEST(CaptureFile, RoundTripKeepsEveryArrayAndParameter) {
  const Capture& c = fixture();
  const std::string bytes = encode_capture(c);
  const Capture back = decode_capture(bytes, "mem");
  // Encoding is deterministic, so equal bytes after a second trip mean every stored value survived.
  EXPECT_EQ(encode_capture(back), bytes);
  // And the reader filled the structures the GUI uses, not just the manifest.
  EXPECT_EQ(back.analysis.prompt_ids, c.analysis.prompt_ids);
  EXPECT_EQ(back.analysis.hip.nll, c.analysis.hip.nll);
  EXPECT_EQ(back.analysis.inputs[1].host().q, c.analysis.inputs[1].host().q);
  EXPECT_EQ(back.analysis.access.sparse_keys, c.analysis.access.sparse_keys);
  EXPECT_EQ(back.analysis.options.hip.hip.k, 8);
  EXPECT_EQ(back.analysis.options.hip.hip.sink, 2);
  EXPECT_EQ(back.analysis.options.random_seed, 7u);
  EXPECT_EQ(back.analysis.kl, c.analysis.kl);
  ASSERT_EQ(back.masks.size(), 2u);
  EXPECT_EQ(back.masks[1].hip.blocks, c.masks[1].hip.blocks);
  EXPECT_EQ(back.masks[1].oracle.counts, c.masks[1].oracle.counts);
  EXPECT_EQ(back.masks[0].recall, c.masks[0].recall);
  ASSERT_EQ(back.traces.size(), 2u);
  EXPECT_EQ(back.traces[0].trace.blocks, c.traces[0].trace.blocks);
  ASSERT_EQ(back.traces[0].trace.iterations.size(), c.traces[0].trace.iterations.size());
  EXPECT_GT(back.traces[0].trace.iterations.size(), 0u);
  EXPECT_EQ(back.traces[0].trace.iterations.back().branches.back().score, c.traces[0].trace.iterations.back().branches.back().score);
  ASSERT_EQ(back.locality.size(), 2u);
  EXPECT_EQ(back.locality[1][1].deltas[2].counts, c.locality[1][1].deltas[2].counts);
  EXPECT_EQ(back.locality[1][1].deltas[2].stddev, c.locality[1][1].deltas[2].stddev);
  ASSERT_TRUE(back.has_offload);
  EXPECT_EQ(back.offload.mask.map.cells, c.offload.mask.map.cells);
  EXPECT_EQ(back.offload.sparse.total.hits, c.offload.sparse.total.hits);
  EXPECT_EQ(back.info.run.prompt, c.info.run.prompt);
  EXPECT_EQ(back.info.model_sha256, c.info.model_sha256);
  EXPECT_EQ(back.info.views, c.info.views);
  EXPECT_EQ(back.images.size(), c.images.size());
  EXPECT_FALSE(back.images.empty());
}

// Each token's text survives the trip; a capture without it (written before the manifest held
// pieces, or by a writer without a tokenizer) still reads, with no pieces; a list that does not
// hold one string per token is damage.
TEST(CaptureFile, TokenPiecesRoundTripAndAreOptional) {
  const Capture& c = fixture();
  ASSERT_EQ(c.info.prompt_pieces.size(), c.analysis.prompt_ids.size());
  ASSERT_FALSE(c.analysis.decode.empty());
  const std::string bytes = encode_capture(c);
  const Capture back = decode_capture(bytes, "mem");
  EXPECT_EQ(back.info.prompt_pieces, c.info.prompt_pieces);
  EXPECT_EQ(back.info.prompt_pieces[1], "\u2581t" + std::to_string(c.analysis.prompt_ids[1]) + (c.analysis.prompt_ids[1] % 2 ? "\"<ü>" : ""));
  EXPECT_EQ(back.info.decode_dense_pieces.size(), c.analysis.decode.size());
  EXPECT_EQ(back.info.decode_hip_pieces, c.info.decode_hip_pieces);
  EXPECT_EQ(back.info.decode_dense_pieces.back(), "\u2581t" + std::to_string(c.analysis.decode.back().dense_token) +
                                                       (c.analysis.decode.back().dense_token % 2 ? "\"<ü>" : ""));
  // The manifest lists them as JSON strings under prompt.pieces and decode_pieces.
  const json m = json::parse(zip_decode(bytes, "x")[0].data);
  EXPECT_EQ(m["prompt"]["pieces"].size(), c.analysis.prompt_ids.size());
  EXPECT_EQ(m["decode_pieces"]["hip"].size(), c.analysis.decode.size());

  const Capture old = decode_capture(with_manifest(bytes, [](json& j) {
    j["prompt"].erase("pieces");
    j.erase("decode_pieces");
  }), "old");
  EXPECT_TRUE(old.info.prompt_pieces.empty());
  EXPECT_TRUE(old.info.decode_dense_pieces.empty());
  EXPECT_EQ(old.analysis.prompt_ids, c.analysis.prompt_ids);
  // Written without pieces: the manifest has none.
  Capture plain = c;
  plain.info.prompt_pieces.clear();
  plain.info.decode_dense_pieces.clear();
  plain.info.decode_hip_pieces.clear();
  EXPECT_FALSE(json::parse(zip_decode(encode_capture(plain), "x")[0].data)["prompt"].contains("pieces"));

  for (const auto& edit : std::vector<std::function<void(json&)>>{
           [](json& j) { j["prompt"]["pieces"].erase(0); },
           [](json& j) { j["prompt"]["pieces"] = "text"; },
           [](json& j) { j["decode_pieces"]["dense"].push_back("x"); },
           [](json& j) { j["decode_pieces"].erase("hip"); }})
    EXPECT_THROW(decode_capture(with_manifest(bytes, edit), "m"), InputError);
}

TEST(CaptureFile, IsAZipOfNpyArraysWithAManifest) {
  const auto entries = zip_decode(encode_capture(fixture()), "mem");
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries[0].name, "manifest.json");
  const json m = json::parse(entries[0].data);
  EXPECT_EQ(m["format"], "hipstudio.capture");
  EXPECT_EQ(m["format_version"], kCaptureFormatVersion);
  EXPECT_EQ(m["dims"]["view_layers"], json::array({0, 1}));  // the fixture keeps both layers
  EXPECT_EQ(m["dims"]["inputs_dtype"], "f32");
  EXPECT_EQ(m["analysis"]["schema"], "hipstudio.analysis/1");  // the analyze schema, embedded
  EXPECT_EQ(m["params"]["b_q"], 4);
  EXPECT_EQ(m["model"]["sha256"], std::string(64, 'a'));
  bool found = false;
  for (const ZipEntry& e : entries)
    if (e.name == "masks/L1/hip/blocks.npy") {
      found = true;
      const NpyArray a = parse_npy(reinterpret_cast<const unsigned char*>(e.data.data()), e.data.size(), e.name);
      EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 10, 4}));
    }
  EXPECT_TRUE(found);
}

TEST(CaptureFile, TruncatedFilesAreRejected) {
  const std::string bytes = encode_capture(fixture());
  for (size_t keep : {size_t{0}, size_t{10}, bytes.size() / 3, bytes.size() - 30, bytes.size() - 1})
    expect_rejected(bytes.substr(0, keep), {"bad.hipcap", "damaged capture"});
}

TEST(CaptureFile, FlippedBytesAreRejected) {
  const std::string bytes = encode_capture(fixture());
  const auto entries = zip_decode(bytes, "x");
  // In the central directory (after the last entry's data) and in the end record.
  const size_t end = bytes.size() - 22;
  const size_t cd = static_cast<uint8_t>(bytes[end + 16]) | static_cast<uint8_t>(bytes[end + 17]) << 8 |
                    static_cast<uint8_t>(bytes[end + 18]) << 16 | static_cast<uint32_t>(static_cast<uint8_t>(bytes[end + 19])) << 24;
  for (size_t at : {cd, cd + 17, cd + 20, cd + 42, cd + 47, end + 10, end + 16}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    expect_rejected(bad, {"damaged capture"});
  }
  // Inside the manifest's text and inside an array's data: the CRC-32 check names the entry.
  std::string bad = bytes;
  const size_t manifest_at = bytes.find("\"format\"");
  ASSERT_NE(manifest_at, std::string::npos);
  bad[manifest_at + 3] ^= 0x01;
  expect_rejected(bad, {"'manifest.json'", "CRC-32"});
  bad = bytes;
  bad[bytes.size() / 2] ^= 0x10;
  expect_rejected(bad, {"damaged capture"});
}

TEST(CaptureFile, ShapesThatDisagreeWithTheManifestAreRejected) {
  const std::string bytes = encode_capture(fixture());
  // The manifest lists another shape for an array.
  expect_rejected(with_manifest(bytes, [](json& m) { m["arrays"]["methods/hip/quality.npy"]["shape"] = {2, 2, 5}; }),
                  {"methods/hip/quality", "[2, 2, 6]", "[2, 2, 5]"});
  // The manifest's dimensions disagree with the arrays.
  expect_rejected(with_manifest(bytes, [](json& m) { m["dims"]["heads"] = 3; }), {"has shape", "need"});
  // An array whose data size disagrees with its own header (same manifest).
  auto entries = zip_decode(bytes, "x");
  for (ZipEntry& e : entries)
    if (e.name == "methods/hip/scalars.npy") e.data.resize(e.data.size() - 8);
  expect_rejected(zip_encode(entries), {"methods/hip/scalars.npy", "truncated"});
  // An array replaced by another of the right shape: the content hash catches it.
  entries = zip_decode(bytes, "x");
  for (ZipEntry& e : entries)
    if (e.name == "methods/hip/scalars.npy") e.data[e.data.size() - 1] ^= 0x01;
  expect_rejected(zip_encode(entries), {"content_sha256"});
  // A missing field.
  expect_rejected(with_manifest(bytes, [](json& m) { m["params"].erase("b_k"); }), {"'b_k'", "missing"});
}

TEST(CaptureFile, VersionsSayWhatTheyNeed) {
  const std::string bytes = encode_capture(fixture());
  expect_rejected(with_manifest(bytes, [](json& m) { m["format_version"] = 4; m["min_reader_version"] = 4; }),
                  {"format version 4", "needs a reader of version 4", "update hipstudio"});
  // A newer writer that stays readable by version 3 readers loads.
  const Capture newer = decode_capture(with_manifest(bytes, [](json& m) { m["format_version"] = 5; m["min_reader_version"] = 3; }), "m");
  EXPECT_EQ(newer.format_version, 5);
  expect_rejected(with_manifest(bytes, [](json& m) { m["format_version"] = 0; m["min_reader_version"] = 0; }), {"older"});
  expect_rejected(with_manifest(bytes, [](json& m) { m["format"] = "something.else"; }), {"not a HiP Studio capture"});
  expect_rejected(zip_encode({{"hello.txt", "hi"}}), {"no manifest.json"});
  expect_rejected("this is not a zip file at all, just some text that is long enough", {"damaged capture"});
}

// A capture of a few layers from a bf16 run: the per-layer arrays are named by the model's layers and
// the Q/K/V go to bfloat16 bits, and come back as the same floats (they were bf16 values).
TEST(CaptureFile, ViewLayersAndBf16InputsRoundTrip) {
  PairedAnalysis a = hipstudio::testing::synthetic_analysis();
  for (LayerInputs& in : a.inputs) {
    LayerInputArrays arrays = in.host();
    for (std::vector<float>* v : {&arrays.q, &arrays.k, &arrays.v})
      for (float& x : *v) x = hipstudio::bf16_to_float(hipstudio::float_to_bf16(x));
    in.set_host(std::move(arrays));
  }
  a.inputs.erase(a.inputs.begin());  // keep layer 1 only
  const std::vector<float> q1 = a.inputs[0].host().q;
  CaptureInfo info;
  info.run = {"0.1.0", "m", "llama", "cuda:0", "p"};
  info.dtype = "bf16";
  CaptureRequest request;
  request.traces = {{1, 0, 2}};
  const offload::OffloadConfig oc = hipstudio::testing::synthetic_offload_config(a);
  const Capture c = build_capture(std::move(a), info, request, &oc);
  ASSERT_EQ(c.view_layers, std::vector<int64_t>{1});
  const std::string bytes = encode_capture(c);
  const Capture back = decode_capture(bytes, "m");
  EXPECT_EQ(back.view_layers, std::vector<int64_t>{1});
  ASSERT_EQ(back.analysis.inputs.size(), 1u);
  EXPECT_EQ(back.analysis.inputs[0].layer, 1);
  EXPECT_EQ(back.analysis.inputs[0].host().q, q1);
  ASSERT_EQ(back.masks.size(), 1u);
  EXPECT_EQ(back.masks[0].hip.blocks, c.masks[0].hip.blocks);
  EXPECT_EQ(back.locality.size(), 1u);
  bool half = false;
  for (const ZipEntry& e : zip_decode(bytes, "m")) {
    EXPECT_NE(e.name, "inputs/L0/q.npy") << "layer 0 was not kept";
    if (e.name == "inputs/L1/q.npy") half = e.data.find("'<u2'") != std::string::npos;
  }
  EXPECT_TRUE(half) << "bf16 inputs are stored as uint16 bits";
  // A trace on a layer without inputs is refused, naming the option that keeps it.
  PairedAnalysis b = hipstudio::testing::synthetic_analysis();
  b.inputs.erase(b.inputs.begin());
  request.traces = {{0, 0, 2}};
  try {
    build_capture(std::move(b), info, request, &oc);
    ADD_FAILURE() << "a trace on a layer without inputs was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--inputs-layers"), std::string::npos) << e.what();
  }
}

TEST(CaptureFile, WritesAtomicallyAndAFailedWriteKeepsTheEarlierCapture) {
  TempDir dir;
  const std::string path = dir.file("run.hipcap");
  write_capture(path, fixture());
  const std::string before = hipstudio::testing::read_bytes(path);
  EXPECT_EQ(read_capture(path).analysis.prompt_ids, fixture().analysis.prompt_ids);
  EXPECT_EQ(read_capture_manifest(path)["format_version"], kCaptureFormatVersion);

  // A write that fails midway (file size limit: write() returns EFBIG, as on a full disk).
  Capture other = hipstudio::testing::synthetic_capture(48);
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  EXPECT_THROW(write_capture(path, other), InputError);
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_EQ(hipstudio::testing::read_bytes(path), before);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "run.hipcap") << "left behind: " << e.path();

  // A directory that cannot be written (skipped as root, who writes anyway).
  if (geteuid() != 0) {
    std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    EXPECT_THROW(write_capture(path, other), InputError);
    std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
    EXPECT_EQ(hipstudio::testing::read_bytes(path), before);
  }
  write_capture(path, other);
  EXPECT_EQ(read_capture(path).analysis.prompt_ids.size(), 48u);
}

TEST(CaptureFile, UnknownViewsAndTracesOutsideThePromptAreInputErrors) {
  PairedAnalysis a = hipstudio::testing::synthetic_analysis();
  const offload::OffloadConfig oc = hipstudio::testing::synthetic_offload_config(a);
  CaptureRequest r;
  r.views = {"mask", "heatmap"};
  EXPECT_THROW(build_capture(a, {}, r, &oc), InputError);
  r = {};
  r.traces = {{0, 0, 99}};
  EXPECT_THROW(build_capture(a, {}, r, &oc), InputError);
  r = {};
  r.views = {"latency"};
  const Capture small = build_capture(a, {}, r, nullptr);
  EXPECT_TRUE(small.masks.empty());
  const Capture back = decode_capture(encode_capture(small), "m");
  EXPECT_TRUE(back.masks.empty());
  EXPECT_FALSE(back.has_offload);
  EXPECT_EQ(back.analysis.inputs.size(), 2u);
  r.keep_inputs = false;
  const Capture no_inputs = decode_capture(encode_capture(build_capture(a, {}, r, nullptr)), "m");
  EXPECT_TRUE(no_inputs.analysis.inputs.empty());
  EXPECT_EQ(no_inputs.analysis.layers.size(), 2u);
}

// Any single flipped byte or truncation gives a clear InputError, or (in bytes no reader looks at:
// alignment padding, file attributes) a capture identical to the original; never a crash or another
// exception type.
TEST(CaptureFile, RandomDamageIsRejectedOrHarmless) {
  const Capture small = [] {
    CaptureRequest r;
    r.views = {"mask", "iterations", "cache", "latency"};
    r.traces = {{1, 1, 2}};
    r.render_images = false;
    PairedAnalysis a = hipstudio::testing::synthetic_analysis(12);
    const offload::OffloadConfig oc = hipstudio::testing::synthetic_offload_config(a);
    return build_capture(std::move(a), {}, r, &oc);
  }();
  const std::string bytes = encode_capture(small);
  uint64_t state = 99;
  int rejected = 0, harmless = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::string bad = bytes;
    const size_t at = static_cast<size_t>((state >> 20) % bytes.size());
    if (trial % 5 == 4) {
      bad.resize(at);
    } else {
      bad[at] = static_cast<char>(bad[at] ^ (1 + (state >> 8) % 255));
    }
    try {
      const Capture c = decode_capture(bad, "fuzz");
      EXPECT_EQ(encode_capture(c), bytes) << "byte " << at << " changed the capture unnoticed";
      ++harmless;
    } catch (const InputError&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "byte " << at << ": " << typeid(e).name() << ": " << e.what();
    }
  }
  EXPECT_GT(rejected, 1300);
}

// Every manifest value replaced by one of the wrong type or a negative number (CRCs recomputed) is
// rejected with an InputError, not trusted.
TEST(CaptureFile, EveryManifestFieldIsChecked) {
  const std::string bytes = encode_capture(hipstudio::testing::synthetic_capture(16));
  const json m = json::parse(zip_decode(bytes, "x")[0].data);
  // Free text, and the embedded analyze JSON (a copy for readers; the arrays are the truth).
  const std::vector<std::string> skip{"/analysis/", "/created", "/tool/name", "/device", "/dtype", "/prompt/text", "/model/name",
                                      "/model/architecture", "/model/sha256", "/tool/version", "/images/"};
  int checked = 0;
  const json flat = m.flatten();  // items() of a temporary would dangle
  for (const auto& item : flat.items()) {
    const std::string pointer = item.key();
    const json& value = item.value();
    bool skipped = false;
    for (const std::string& s : skip) skipped |= pointer.rfind(s, 0) == 0;
    if (skipped) continue;
    std::vector<json> wrongs;
    if (value.is_string()) wrongs = {json(5)};
    if (value.is_number()) wrongs = {json("x"), json(-3)};
    if (value.is_boolean()) wrongs = {json("x"), json(2)};
    for (const json& wrong : wrongs) {
      const std::string bad = with_manifest(bytes, [&](json& j) { j[json::json_pointer(pointer)] = wrong; });
      try {
        decode_capture(bad, "m");
        ADD_FAILURE() << pointer << " = " << wrong.dump() << " was accepted";
      } catch (const InputError&) {
        ++checked;
      } catch (const std::exception& e) {
        ADD_FAILURE() << pointer << " = " << wrong.dump() << ": " << e.what();
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(ZipStore, ChecksumAndNames) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_THROW(zip_encode({{"../evil", "x"}}), InputError);
  EXPECT_THROW(zip_encode({{"a", "x"}, {"a", "y"}}), InputError);
  const auto back = zip_decode(zip_encode({{"a/b.txt", "hello"}, {"c", ""}}), "m");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].data, "hello");
  EXPECT_EQ(back[1].data, "");
}

}  // namespace
}  // namespace hipstudio::captures
