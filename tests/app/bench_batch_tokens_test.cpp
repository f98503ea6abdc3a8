// bench model --batch N --tokens T1,...,TN: mixed prompt lengths run and are reported, a list that
// does not match --batch (or holds a non-length) is refused before any work, and a batch that cannot
// fit is refused before the weights load with the largest batch that fits; --decode-rounds decodes
// again from one prefill.
#include <string>

#include <gtest/gtest.h>

#include "tests/app/cli_contract.h"

namespace {

using hipstudio::testing::CommandResult;
using hipstudio::testing::expect_refused_early;
using hipstudio::testing::has;
using hipstudio::testing::run_merged;

const std::string kHip = " --topk 16 --bq 8 --bk 2 --ld 1 --rm 2 --warmup 0 --repeats 1";

TEST(BenchBatchTokens, ListsThatDoNotMatchTheBatchAreRefusedBeforeAnyWork) {
  expect_refused_early("bench model --decode 2 --batch 3 --tokens 8,16", {"--tokens: 2 prompt lengths for --batch 3", "(or --batch 2)"});
  expect_refused_early("bench model --decode 2 --tokens 8,16", {"--tokens: 2 prompt lengths for --batch 1"});
  expect_refused_early("bench model --decode 2 --batch 2 --tokens 8,,16", {"--tokens: '' is not a prompt length"});
  expect_refused_early("bench model --decode 2 --batch 2 --tokens 8,x", {"--tokens: 'x' is not a prompt length"});
  expect_refused_early("bench model --decode 2 --batch 2 --tokens -8", {"--tokens: '-8' is not a prompt length"});
  expect_refused_early("bench model --decode 2 --batch 2 --tokens 8,0", {"--tokens: 0 is out of range"});
  // The longest sequence is the one the context must hold.
  expect_refused_early("bench model --decode 2 --batch 2 --tokens 8,300", {"--tokens", "the context is 256 tokens"});
}

TEST(BenchBatchTokens, MixedLengthsRunAndAreReportedWithTheBreakdown) {
  const CommandResult r = run_merged("bench model --decode 2 --batch 4 --tokens 64,64,16,32" + kHip);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const std::string needle : {"batch 4: 4 different prompts of 2 x 64 + 1 x 16 + 1 x 32 tokens", "\ndense ", "\nhip ",
                                   "mask ms", "decode step breakdown (dense", "decode step breakdown (hip",
                                   "decode t/s = 4 x 1000 / decode ms"})
    EXPECT_TRUE(has(r.out, needle)) << "no '" << needle << "' in\n" << r.out;
  // One length for all: every sequence has it.
  const CommandResult same = run_merged("bench model --decode 2 --batch 2 --tokens 24" + kHip);
  ASSERT_EQ(same.status, 0) << same.out;
  EXPECT_TRUE(has(same.out, "2 different prompts of 2 x 24 tokens")) << same.out;
}

// --decode-rounds: several rounds of decode steps from each run's one prefill, each round going back
// to the prompts first; the bench checks that every round's logits are the first round's (a rollback
// that left a step's keys or a stale HiP mask behind fails the run), and the header says what the
// median is over. At batch 1 the flag is refused before any work.
TEST(BenchBatchTokens, DecodeRoundsReplayTheFirstRoundFromOnePrefill) {
  const CommandResult r = run_merged("bench model --decode 3 --batch 2 --tokens 40,24 --decode-rounds 3" + kHip);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "median of 1 runs x 3 decode rounds from each run's prefill")) << r.out;
  EXPECT_FALSE(has(r.out, "differ from the first round")) << r.out;
  expect_refused_early("bench model --decode 2 --tokens 8 --decode-rounds 3", {"--decode-rounds 3 needs --batch N with N > 1"});
}

TEST(BenchBatchTokens, ABatchThatCannotFitIsRefusedBeforeLoadingWithTheLargestThatFits) {
  // 256 caches of 2^22 positions of stories15M hold about 10 TB.
  const CommandResult r = run_merged("bench model --context 4194400 --tokens 4194304 --decode 1 --batch 256" + kHip);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: ")) << r.out;
  EXPECT_TRUE(has(r.out, "fewer --batch sequences (256 now")) << r.out;
  EXPECT_TRUE(has(r.out, "at 4194304 prompt tokens + 1 new tokens the largest --batch that fits is ")) << r.out;
  EXPECT_FALSE(has(r.out, "model: ")) << "the weights loaded before the refusal\n" << r.out;
}

}  // namespace
