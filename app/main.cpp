// hipstudio: command-line entry point. Every subcommand lives in its own cmd_*.cpp file.
#include <cstdio>
#include <exception>

#include "app/commands.h"
#include "engine/formats/errors.h"

int main(int argc, char** argv) {
  CLI::App root{"HiP Studio: explore and profile Hierarchically Pruned Attention on real LLMs"};
  root.set_version_flag("--version", std::string("hipstudio ") + HIPSTUDIO_VERSION);
  root.require_subcommand(1);
  CLI::App* bench = root.add_subcommand("bench", "Benchmarks that print tables (speed targets live here)");
  bench->require_subcommand(1);
  hipstudio::app::register_model_commands(root, *bench);
  hipstudio::app::register_mask_commands(root, *bench);
  hipstudio::app::register_kernel_bench(*bench);
  hipstudio::app::register_analyze_command(root);
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return root.exit(e);
  } catch (const hipstudio::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // parameter rules (HiP, kernels) broken by the user
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
