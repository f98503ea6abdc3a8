// The file browser's decisions (app/gui/file_browser_model.h) on a real temporary folder tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/gui/file_browser_model.h"

namespace hipstudio::gui {
namespace {

namespace fs = std::filesystem;

class FileBrowserTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("hipstudio_browser_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "b_folder");
    fs::create_directories(root_ / "a_folder");
    fs::create_directories(root_ / ".hidden_folder");
    write("zeta.txt", 10);
    write("Alpha.TXT", 2048);
    write("notes.md", 3);
    write(".secret.txt", 1);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& name, size_t bytes) { std::ofstream(root_ / name) << std::string(bytes, 'x'); }
  static std::vector<std::string> names(const FolderListing& l) {
    std::vector<std::string> out;
    for (const auto& e : l.entries) out.push_back(e.folder ? e.name + "/" : e.name);
    return out;
  }
  fs::path root_;
};

TEST_F(FileBrowserTree, ListsFoldersFirstThenFilteredFilesInNameOrder) {
  const FolderListing all = list_folder(root_.string(), {}, false);
  EXPECT_TRUE(all.error.empty());
  EXPECT_EQ(names(all), (std::vector<std::string>{"a_folder/", "b_folder/", "Alpha.TXT", "notes.md", "zeta.txt"}));
  // The filter is case-insensitive and never hides folders.
  const FolderListing txt = list_folder(root_.string(), {".txt"}, false);
  EXPECT_EQ(names(txt), (std::vector<std::string>{"a_folder/", "b_folder/", "Alpha.TXT", "zeta.txt"}));
  EXPECT_EQ(txt.entries[2].bytes, 2048);
  const FolderListing hidden = list_folder(root_.string(), {".txt"}, true);
  EXPECT_EQ(names(hidden), (std::vector<std::string>{".hidden_folder/", "a_folder/", "b_folder/", ".secret.txt", "Alpha.TXT", "zeta.txt"}));
}

TEST_F(FileBrowserTree, AnUnreadableFolderSaysSoInsteadOfListingNothing) {
  const FolderListing l = list_folder((root_ / "missing").string(), {}, false);
  EXPECT_TRUE(l.entries.empty());
  EXPECT_NE(l.error.find("cannot read folder"), std::string::npos);
  EXPECT_NE(l.error.find("missing"), std::string::npos);
}

TEST_F(FileBrowserTree, PathsNavigateUpAndJoinAndStartInTheNearestExistingFolder) {
  EXPECT_EQ(parent_folder((root_ / "a_folder").string()), root_.string());
  EXPECT_EQ(parent_folder("/"), "/");
  EXPECT_EQ(join_path(root_.string(), "a_folder"), (root_ / "a_folder").string());
  EXPECT_EQ(join_path(root_.string(), "/etc"), "/etc");
  EXPECT_EQ(starting_folder((root_ / "zeta.txt").string()), root_.string());
  EXPECT_EQ(starting_folder((root_ / "a_folder").string()), (root_ / "a_folder").string());
  EXPECT_EQ(starting_folder((root_ / "no" / "such" / "file.txt").string()), root_.string());
}

TEST_F(FileBrowserTree, SaveAsksBeforeCreatingAFolderOrReplacingAFile) {
  const SaveCheck fresh = check_save_target((root_ / "new.svg").string());
  EXPECT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh.missing_folder.empty());
  EXPECT_FALSE(fresh.replaces_file);

  const SaveCheck existing = check_save_target((root_ / "zeta.txt").string());
  EXPECT_TRUE(existing.ok());
  EXPECT_TRUE(existing.replaces_file);

  const fs::path deep = root_ / "figs" / "run1" / "mask.png";
  const SaveCheck missing = check_save_target(deep.string());
  EXPECT_TRUE(missing.ok());
  EXPECT_EQ(missing.missing_folder, deep.parent_path().string());
  EXPECT_FALSE(fs::exists(root_ / "figs")) << "the check itself creates nothing";
  EXPECT_TRUE(create_folders(missing.missing_folder).empty());
  EXPECT_TRUE(fs::is_directory(deep.parent_path()));
  EXPECT_TRUE(check_save_target(deep.string()).missing_folder.empty());
}

TEST_F(FileBrowserTree, SaveRefusesAFolderAsTheFileAndAFileInTheWayOfAFolder) {
  EXPECT_FALSE(check_save_target("").ok());
  const SaveCheck folder = check_save_target((root_ / "a_folder").string());
  EXPECT_FALSE(folder.ok());
  EXPECT_NE(folder.error.find("is a folder"), std::string::npos);
  const SaveCheck blocked = check_save_target((root_ / "zeta.txt" / "inside.png").string());
  EXPECT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error.find("is a file, not a folder"), std::string::npos);
  EXPECT_FALSE(create_folders((root_ / "zeta.txt" / "sub").string()).empty());
}

TEST(FileBrowserRecent, RecentFoldersMoveToTheFrontWithoutDuplicatesAndStayBounded) {
  std::vector<std::string> recent;
  for (int i = 0; i < 12; ++i) push_recent_folder(recent, "/data/run" + std::to_string(i));
  ASSERT_EQ(recent.size(), kMaxRecentFolders);
  EXPECT_EQ(recent.front(), "/data/run11");
  push_recent_folder(recent, "/data/run8/");  // the same folder spelled with a slash
  EXPECT_EQ(recent.size(), kMaxRecentFolders);
  EXPECT_EQ(recent.front(), "/data/run8");
  EXPECT_EQ(std::count(recent.begin(), recent.end(), "/data/run8"), 1);
  push_recent_folder(recent, "");
  EXPECT_EQ(recent.front(), "/data/run8");
}

TEST(FileBrowserRecent, SizesReadAsPeopleWriteThem) {
  EXPECT_EQ(readable_bytes(-1), "");
  EXPECT_EQ(readable_bytes(512), "512 B");
  EXPECT_EQ(readable_bytes(2048), "2.0 KB");
  EXPECT_EQ(readable_bytes(int64_t{5} << 30), "5.0 GB");
}

}  // namespace
}  // namespace hipstudio::gui
