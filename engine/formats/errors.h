#pragma once
// Errors about what a user handed us (a file, a flag, a prompt). The message names the problem and
// the fix; the command line prints it and exits with status 2, the GUI shows it and stays usable.
#include <stdexcept>
#include <string>

namespace hipstudio {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hipstudio
