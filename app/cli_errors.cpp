#include "app/cli_errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>

#include "engine/formats/errors.h"

namespace hipstudio::app {

namespace {

// "hipstudio bench mask": the deepest subcommand the parser reached, for the --help hint.
std::string command_path(const CLI::App& root) {
  std::string path = root.get_name();
  const CLI::App* app = &root;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : app->get_subcommands()) {
      path += " " + sub->get_name();
      app = sub;
      deeper = true;
      break;
    }
  }
  return path;
}

// CLI11's wording made to name the problem and the fix.
std::string parse_problem(const CLI::ParseError& e) {
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::string extra = what.substr(what.find(':') + 1);
    extra.erase(0, extra.find_first_not_of(' '));
    return "unknown option or argument: " + extra;
  }
  return what;
}

int fail(const std::string& message, int status) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return status;
}

// A full disk or closed pipe behind stdout must not pass for success: the output is incomplete.
int finish_stdout(int status) {
  errno = 0;
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!failed) return status;
  const std::string reason = errno ? std::strerror(errno) : "write error";
  std::fprintf(stderr, "error: writing the output to stdout failed (%s): the output is incomplete; free disk space "
                       "or redirect stdout elsewhere\n", reason.c_str());
  return status == 0 ? 2 : status;
}

}  // namespace

int run_command_line(CLI::App& root, int argc, char** argv, const std::function<int()>& after_parse) {
  int status = 0;
  try {
    root.parse(argc, argv);
    status = after_parse();
  } catch (const CLI::Success& e) {  // --help, --help-all
    return finish_stdout(root.exit(e));
  } catch (const CLI::ParseError& e) {
    // CLI11 checks required options (and values) before it reports unknown ones; a typo in an option
    // name is the likelier cause of both (`--promt hi`), so it is named first.
    std::string problem = parse_problem(e);
    if (!dynamic_cast<const CLI::ExtrasError*>(&e)) {
      std::string extras;
      for (const std::string& arg : root.remaining(true)) extras += (extras.empty() ? "" : " ") + arg;
      if (!extras.empty()) problem = "unknown option or argument: " + extras + " (then: " + problem + ")";
    }
    return fail(problem + " (see `" + command_path(root) + " --help`)", 2);
  } catch (const InputError& e) {
    return fail(e.what(), 2);
  } catch (const std::invalid_argument& e) {  // parameter rules (HiP, kernels) broken by the user
    return fail(e.what(), 2);
  } catch (const std::filesystem::filesystem_error& e) {  // the system refused a file operation on the user's paths
    return fail(e.what(), 2);
  } catch (const std::bad_alloc&) {
    return fail("out of memory: the run needs more memory than this machine gave it; use a shorter prompt, a smaller "
                "model or output, or free memory",
                1);
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what() + " (a bug in hipstudio; please report it with the command line)", 1);
  }
  return finish_stdout(status);
}

}  // namespace hipstudio::app
