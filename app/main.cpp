// hipstudio-core: the command line (run through the `hipstudio` front, app/launcher). Every
// subcommand lives in its own cmd_*.cpp file; every error leaves through app/cli_errors.
#include "app/cli_errors.h"
#include "app/cli_options.h"
#include "app/commands.h"
#ifdef HIPSTUDIO_HAVE_GUI
#include "app/gui/gui_main.h"
#endif

int main(int argc, char** argv) {
  // Named explicitly: "Usage:" shows `hipstudio`, not the path this binary was started from.
  CLI::App root{"HiP Studio: explore and profile Hierarchically Pruned Attention on real LLMs", "hipstudio"};
  root.set_version_flag("--version", std::string("hipstudio ") + HIPSTUDIO_VERSION);
#ifdef HIPSTUDIO_HAVE_GUI
  root.require_subcommand(0, 1);  // no subcommand opens the GUI
  hipstudio::gui::GuiOptions gui_options;
  hipstudio::gui::add_gui_options(root, gui_options);
  hipstudio::app::check_range_first(root, "--frames", 0, 1000000);  // the GUI's one numeric option
#else
  root.require_subcommand(1);
#endif
  CLI::App* bench = root.add_subcommand("bench", "Benchmarks that print tables: generation, whole models, mask estimation, CUDA kernels");
  bench->require_subcommand(1);
  hipstudio::app::register_model_commands(root, *bench);
  hipstudio::app::register_mask_commands(root, *bench);
  hipstudio::app::register_kernel_bench(*bench);
  hipstudio::app::register_analyze_command(root);
  hipstudio::app::register_capture_commands(root);
  return hipstudio::app::run_command_line(root, argc, argv, [&]() -> int {
#ifdef HIPSTUDIO_HAVE_GUI
    if (root.get_subcommands().empty()) return hipstudio::gui::run_gui(gui_options);
    // `hipstudio open FILE` shows the capture in the GUI (its callback printed nothing then).
    if (const CLI::App* open = root.get_subcommand("open"); open->parsed() && hipstudio::gui::open_shows_gui(*open)) {
      gui_options.capture = open->get_option("capture")->as<std::string>();
      if (open->count("--compare") > 0) gui_options.compare = open->get_option("--compare")->as<std::string>();
      return hipstudio::gui::run_gui(gui_options);
    }
#endif
    return 0;
  });
}
