// remove_tree removes a whole tree, tolerates a missing path, and never follows symbolic links.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/formats/remove_tree.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio {
namespace {

TEST(RemoveTree, RemovesNestedFilesButNotWhatLinksPointTo) {
  testing::TempDir outside;
  std::ofstream(outside.file("keep.txt")) << "keep";
  testing::TempDir tmp;
  const std::filesystem::path root = tmp.path() / "tree";
  std::filesystem::create_directories(root / "a" / "b");
  std::ofstream(root / "a" / "b" / "file.bin") << "x";
  std::ofstream(root / "top.txt") << "y";
  ASSERT_EQ(::symlink(outside.path().c_str(), (root / "link").c_str()), 0);
  EXPECT_TRUE(remove_tree(root.string()));
  EXPECT_FALSE(std::filesystem::exists(root));
  EXPECT_TRUE(std::filesystem::exists(outside.file("keep.txt")));
  EXPECT_TRUE(remove_tree(root.string()));  // already gone: fine
}

}  // namespace
}  // namespace hipstudio
