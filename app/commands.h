#pragma once
// Each command family registers its subcommands on the root app (and on `bench` for its
// benchmarks). main.cpp calls every register function once; the callbacks do the work.
#include <CLI/CLI.hpp>

namespace hipstudio::app {

void register_model_commands(CLI::App& root, CLI::App& bench);  // generate, ppl, convert, bench generate
void register_mask_commands(CLI::App& root, CLI::App& bench);   // mask, bench mask
void register_kernel_bench(CLI::App& bench);                     // bench kernels (CUDA HiP kernels)
void register_analyze_command(CLI::App& root);                  // analyze
void register_capture_commands(CLI::App& root);                 // capture, report, export, open

}  // namespace hipstudio::app
