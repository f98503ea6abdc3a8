#pragma once
// Recursive removal of a directory tree, without std::filesystem::remove_all: PyTorch's LibTorch
// wheels export their own copy of that symbol, and a program linked against them crashes in it
// (seen with PyTorch 2.11 + gcc 13). Every LibTorch-linked target uses this instead.
#include <string>

namespace hipstudio {

// Removes `path` and everything below it; a missing path is not an error. Returns false (and
// removes what it can) when something could not be removed.
bool remove_tree(const std::string& path) noexcept;

}  // namespace hipstudio
