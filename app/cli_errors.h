#pragma once
// The one error handler of the command line. Every failure, CLI11's parse errors included, leaves
// through here as one line `error: <problem and fix>` on stderr and an exit status:
//   0  success (and --help)
//   2  a problem with the user's input or environment that the message says how to fix: bad options,
//      missing or corrupt files, impossible parameters, an output that cannot be written (stdout too)
//   1  an internal error (a bug) or memory exhausted
#include <functional>

#include <CLI/CLI.hpp>

namespace hipstudio::app {

// Parses argv with `root`, runs the parsed command's callback and then `after_parse` (the GUI path),
// flushes stdout and maps every exception to the line and status above.
int run_command_line(CLI::App& root, int argc, char** argv, const std::function<int()>& after_parse);

}  // namespace hipstudio::app
