// The command line on a model folder whose config.json sets a maths key HiP Studio does not
// implement: `error:` naming the key and exit status 2, before any weight is read (the weights
// here are not even a safetensors file).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/app/run_hipstudio.h"
#include "tests/engine/arch_fixture.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

TEST(ArchCli, AnUnsupportedMathsKeyFailsBeforeWeightsLoad) {
  if (!std::filesystem::exists(HIPSTUDIO_BINARY)) GTEST_SKIP() << "hipstudio is not built";
  testing::TempDir tmp;
  const std::string dir = tmp.file("bad");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(testing::arch_fixture("llama2") + "/tokenizer.json", dir + "/tokenizer.json");
  nlohmann::json config = testing::read_json(testing::arch_fixture("llama2") + "/config.json");
  config["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"rope_theta", 10000.0}};
  testing::write_json(dir + "/config.json", config);
  std::ofstream(dir + "/model.safetensors") << "not weights";
  const auto r = testing::run_hipstudio("ppl --model " + dir + " --text hi", /*merge_stderr=*/true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("error:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("yarn"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("safetensors"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hipstudio
