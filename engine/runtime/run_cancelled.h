#pragma once
// A long engine run (paired analysis, generation) stopped because its progress callback asked it
// to: the caller's cancel, not an error. One type for every run, so that a caller (the GUI worker)
// catches it once.
#include <exception>

namespace hipstudio {

struct RunCancelled : std::exception {
  const char* what() const noexcept override { return "cancelled"; }
};

}  // namespace hipstudio
