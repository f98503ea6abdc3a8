// scripts/timeline-steps (the kernel timeline's reader, README "Decode steps on CUDA") on a timeline
// written here, whose steps, gaps and kernel times are known: a prefill, then three decode steps of
// two kernels each with a 5 us gap between them, each ending with the logits' copy to the host.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/app/run_hipstudio.h"

namespace hipstudio {
namespace {

struct Timeline {
  std::string path = ::testing::TempDir() + "timeline_steps_test.csv";
  std::ofstream out{path};
  long long t = 1000;  // ns
  void line(const std::string& kind, const std::string& name, long long start, long long end, long long bytes = 0) {
    out << kind << "," << name << "," << start << "," << end << ",7,0," << bytes << ",0\n";
  }
  void kernel(const std::string& name, long long gap_ns, long long ns) {
    t += gap_ns;
    line("kernel", name, t, t + ns);
    t += ns;
  }
  void logits_copy() {
    line("memcpy", "2", t + 2000, t + 3000, 513024);  // CUPTI's device-to-host kind, the logits' bytes
    t += 3000;
  }
};

TEST(TimelineSteps, FindsTheStepsGapsAndKernelTimesOfAKnownTimeline) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 on this machine";
  {
    Timeline tl;
    // A template argument with a comma, as real kernel names have: the name is read whole.
    tl.kernel("prefill_kernel<a, b>", 0, 600'000'000);
    tl.logits_copy();
    for (int step = 0; step < 3; ++step) {
      tl.line("api", "cudaDeviceSynchronize_v3020", tl.t, tl.t + 1000);
      tl.t += 1000;
      tl.kernel("row_gemv_kernel", 10'000, 100'000);        // 10 us after the host's wait
      tl.kernel("sparse_attention_mma", 5'000, 50'000);    // a 5 us idle gap before it
      tl.logits_copy();                                     // 2 us after the last kernel
    }
  }
  const std::string script = std::string(HIPSTUDIO_SOURCE_DIR) + "/scripts/timeline-steps";
  FILE* pipe = popen(("python3 " + script + " " + ::testing::TempDir() + "timeline_steps_test.csv --step 1 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << out;
  EXPECT_NE(out.find("7 kernels, 4 logits copies of 513024 bytes"), std::string::npos) << out;
  EXPECT_NE(out.find("== run 0: hip, prefill 600.0 ms, 3 steps"), std::string::npos) << out;
  // Step 1: span from its first kernel to the copy's end 158 us (100 + 5 + 50 + 3), the host's wait
  // 10 us before it, the last kernel 2 us before the copy, 150 us of kernels, one gap of 5 us.
  EXPECT_NE(out.find("   1    158.0     10.0      2.0    150.0    1      5.0      2"), std::string::npos) << out;
  EXPECT_NE(out.find("1      5.0     5.0  after row_gemv_kernel before sparse_attention_mma"), std::string::npos) << out;
  // A kernel's time runs from its start to the next one's: the gap counts to the kernel before.
  EXPECT_NE(out.find("105.0  row_gemv_kernel"), std::string::npos) << out;
  EXPECT_NE(out.find("50.0  sparse_attention_mma"), std::string::npos) << out;
}

TEST(TimelineSteps, RefusesAStepOptionWithoutANumber) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 on this machine";
  const std::string script = std::string(HIPSTUDIO_SOURCE_DIR) + "/scripts/timeline-steps";
  const int raw = std::system(("python3 " + script + " /nonexistent.csv --step >/dev/null 2>&1").c_str());
  EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, 2);
}

// A file that is not there, or a gzip file cut short, gets an error naming it and exit 2, not a
// Python traceback; --help is the usage, not a file name.
TEST(TimelineSteps, RefusesMissingAndTruncatedFilesAndAnswersHelp) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 on this machine";
  const std::string script = std::string(HIPSTUDIO_SOURCE_DIR) + "/scripts/timeline-steps";
  const std::string dir = ::testing::TempDir();
  const std::string out = dir + "timeline_steps_refusal.txt", cut = dir + "timeline_steps_cut.csv.gz";
  // A gzip stream of a few lines, cut in half: gzip reads part of it, then finds no end.
  ASSERT_EQ(std::system(("python3 -c \"import gzip,sys; d=gzip.compress(b'kernel,k,1,2,7,0,0,0\\n'*500); "
                         "open(sys.argv[1],'wb').write(d[:len(d)//2])\" " + cut).c_str()),
            0);
  for (const std::string& path : {std::string("/nonexistent/timeline.csv.gz"), cut}) {
    const int raw = std::system(("python3 " + script + " " + path + " >" + out + " 2>&1").c_str());
    EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, 2) << path;
    std::ifstream f(out);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("error: cannot read the timeline " + path), std::string::npos) << text;
    EXPECT_EQ(text.find("Traceback"), std::string::npos) << text;
  }
  std::remove(out.c_str());
  std::remove(cut.c_str());
  const int help = std::system(("python3 " + script + " --help >/dev/null 2>&1").c_str());
  EXPECT_EQ(WIFEXITED(help) ? WEXITSTATUS(help) : -1, 0);
}

}  // namespace
}  // namespace hipstudio
