// The GUI's options checked before any window opens: a bad --gui-device, --gui-dtype, --timing-steps,
// an unwritable --timing-log, an unreadable --gui-prompt @FILE, and the scale script's options used
// without --self-test (or with --soak, --frames) are input errors (exit 2, `error: ...` naming the
// fix). Run without a display: a check that let the value through would end at "cannot open a
// window" instead, which these messages tell apart.
#include <gtest/gtest.h>

#include "tests/app/run_hipstudio.h"

namespace hipstudio::gui {
namespace {

void expect_input_error(const std::string& args, const std::string& message) {
  const testing::CommandResult r = testing::run_hipstudio(args, true);
  EXPECT_EQ(r.status, 2) << args << ": " << r.out;
  EXPECT_NE(r.out.find("error: " + message), std::string::npos) << args << ": " << r.out;
}

TEST(GuiOptions, BadDeviceIsAnInputError) {
  expect_input_error("--gui-device gpu", "--gui-device 'gpu' is not a device: use --gui-device cpu or --gui-device cuda");
  expect_input_error("--self-test --timing-log /tmp/hipstudio-unused.log --gui-device CUDA", "--gui-device 'CUDA' is not a device");
}

TEST(GuiOptions, BadDtypeIsAnInputError) {
  expect_input_error("--gui-dtype fp8", "--gui-dtype 'fp8' is not a dtype: use --gui-dtype f32, bf16 or f16");
}

TEST(GuiOptions, CudaWhereThereIsNone) {
  // Where CUDA is available the device passes and the next check (a bad --timing-steps) answers.
  const testing::CommandResult r = testing::run_hipstudio("--self-test --gui-device cuda --timing-steps bogus", true);
  EXPECT_EQ(r.status, 2) << r.out;
  const bool no_cuda = r.out.find("error: --gui-device cuda: CUDA is not available") != std::string::npos;
  const bool next = r.out.find("error: --timing-steps 'bogus'") != std::string::npos;
  EXPECT_TRUE(no_cuda || next) << r.out;
  if (no_cuda) {
    EXPECT_NE(r.out.find("use --gui-device cpu"), std::string::npos) << r.out;
  }
}

TEST(GuiOptions, TimingOptions) {
  expect_input_error("--timing-log /tmp/hipstudio-unused.log", "--timing-log and --timing-steps run the self-test's scale script: add --self-test");
  expect_input_error("--self-test --soak 3 --timing-log /tmp/hipstudio-unused.log", "--timing-log and --soak are two different");
  expect_input_error("--self-test --timing-steps some", "--timing-steps 'some': use --timing-steps all or --timing-steps basic");
  expect_input_error("--self-test --timing-log /proc/hipstudio/none.log", "--timing-log /proc/hipstudio/none.log: cannot write");
  expect_input_error("--self-test --timing-log /tmp/hipstudio-unused.log --frames 10", "--frames and --frame-stats measure");
}

TEST(GuiOptions, UnreadablePromptFile) {
  expect_input_error("--gui-prompt @/nonexistent/prompt.txt", "--gui-prompt @/nonexistent/prompt.txt: cannot read /nonexistent/prompt.txt");
}

}  // namespace
}  // namespace hipstudio::gui
