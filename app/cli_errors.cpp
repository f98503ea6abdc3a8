#include "app/cli_errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>

#include "app/cli_text.h"
#include "engine/formats/errors.h"

namespace hipstudio::app {

namespace {

// The deepest subcommand the parser reached.
const CLI::App& deepest(const CLI::App& root) {
  const CLI::App* app = &root;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : app->get_subcommands()) {
      app = sub;
      deeper = true;
      break;
    }
  }
  return *app;
}

// "hipstudio bench mask": the deepest subcommand's path, for the --help hint.
std::string command_path(const CLI::App& root) {
  std::string path;
  for (const CLI::App* app = &deepest(root); app; app = app->get_parent()) path = app->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

// What the parser could not place, in the order given: "unknown command genrate (did you mean
// generate?)" where a subcommand was expected; "unknown option --max-token (did you mean
// --max-tokens?)" for the first word that looks like an option (the words after it are most likely
// its value); else "unexpected argument: WORD". CLI11's own list comes reversed ("3 --max-token").
std::string extras_problem(const CLI::App& root, const std::vector<std::string>& extras) {
  const CLI::App& app = deepest(root);
  const auto option_like = [](const std::string& w) { return w.size() >= 2 && w[0] == '-' && !(w[1] >= '0' && w[1] <= '9'); };
  // A word where a subcommand was expected ("hipstudio genrate --prompt hi"): an unknown command.
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  if (!commands.empty() && !extras.empty() && !option_like(extras.front())) {
    const std::string near = closest_name(extras.front(), commands);
    return "unknown command " + extras.front() + (near.empty() ? "" : " (did you mean " + near + "?)");
  }
  for (const std::string& word : extras) {
    if (!option_like(word)) continue;
    const std::string name = word.substr(0, word.find('='));
    std::vector<std::string> known;
    for (const CLI::Option* o : app.get_options())
      for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
    const std::string near = closest_name(name, known);
    return "unknown option " + name + (near.empty() ? "" : " (did you mean " + near + "?)");
  }
  std::string words;
  for (const std::string& w : extras) words += (words.empty() ? "" : " ") + w;
  return "unexpected argument: " + words;
}

// CLI11's wording made to name the problem and the fix.
std::string parse_problem(const CLI::App& root, const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) return extras_problem(root, root.remaining(true));
  // "--seed: At Most 1 required but received 2": a single-valued option repeated.
  const std::string at_most = ": At Most 1 required but received ";
  if (const size_t at = what.find(at_most); dynamic_cast<const CLI::ArgumentMismatch*>(&e) && at != std::string::npos)
    return "option " + what.substr(0, at) + " given more than once: give it once";
  return what;
}

int fail(const std::string& message, int status) {
  std::fflush(stdout);
  // Messages quote files and arguments: their raw bytes (0xFF, ESC, newlines) are escaped here, once.
  std::fprintf(stderr, "error: %s\n", escape_for_terminal(message).c_str());
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
    std::string problem = parse_problem(root, e);
    if (!dynamic_cast<const CLI::ExtrasError*>(&e)) {
      const std::vector<std::string> extras = root.remaining(true);
      if (!extras.empty()) problem = extras_problem(root, extras) + " (then: " + problem + ")";
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
