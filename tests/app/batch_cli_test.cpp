// --batch of generate and bench model: refused out of range before any work, and a greedy batch
// prints the batch-1 text once per sequence.
#include <string>

#include <gtest/gtest.h>

#include "tests/app/cli_contract.h"

namespace {

using hipstudio::testing::CommandResult;
using hipstudio::testing::expect_refused_early;
using hipstudio::testing::has;
using hipstudio::testing::run_hipstudio;
using hipstudio::testing::run_merged;

TEST(BatchCli, ZeroAndAbsurdBatchesAreRefusedBeforeAnyWork) {
  for (const std::string command : {"generate --prompt 'Once upon a time'", "bench model --tokens 64 --decode 2"}) {
    expect_refused_early(command + " --batch 0", {"--batch: 0 is out of range", "from 1 to 256"});
    expect_refused_early(command + " --batch 100000", {"--batch: 100000 is out of range", "from 1 to 256"});
    expect_refused_early(command + " --batch two", {"--batch: 'two' is not an integer"});
  }
}

TEST(BatchCli, GreedyBatchPrintsTheBatchOneTextForEachSequence) {
  const std::string args = "generate --prompt 'Once upon a time' --max-tokens 12";
  const CommandResult single = run_hipstudio(args);
  ASSERT_EQ(single.status, 0) << run_merged(args).out;
  ASSERT_TRUE(has(single.out, "Once upon a time, there was a little girl named Lily.")) << single.out;
  const CommandResult batch = run_hipstudio(args + " --batch 2");
  ASSERT_EQ(batch.status, 0) << run_merged(args + " --batch 2").out;
  EXPECT_EQ(batch.out, "[sequence 0]\n" + single.out + "[sequence 1]\n" + single.out);
  const CommandResult merged = run_merged(args + " --batch 2");
  EXPECT_TRUE(has(merged.out, "batch: 2 sequences")) << merged.out;
}

TEST(BatchCli, BenchModelBatchReportsBothSidesTokensPerSecondAndTheSpeedup) {
  const CommandResult r =
      run_merged("bench model --tokens 64 --decode 2 --topk 16 --bq 8 --bk 2 --ld 1 --rm 2 --warmup 0 --repeats 1 --batch 3");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const std::string needle : {"batch 3: 3 different prompts", "decode t/s", "\ndense ", "\nhip ", "speedup (dense / HiP)",
                                   "decode t/s = 3 x 1000 / decode ms"})
    EXPECT_TRUE(has(r.out, needle)) << "no '" << needle << "' in\n" << r.out;
}

}  // namespace
