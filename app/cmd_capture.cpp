// `hipstudio capture`, `report` and `open` (headless part): captures and report material.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <future>
#include <memory>

#include "app/commands.h"
#include "app/progress_line.h"
#include "app/analysis_options.h"
#include "app/hip_options.h"
#include "app/cli_options.h"
#include "app/cli_paths.h"
#include "app/method_options.h"
#include "app/method_table.h"
#include "app/model_preflight.h"
#include "captures/atomic_file.h"
#include "captures/capture.h"
#include "captures/capture_compare.h"
#include "captures/export_view.h"
#include "captures/exports.h"
#include "captures/sha256.h"
#include "kernels/parallel_for.h"
#include "engine/formats/errors.h"
#include "engine/analysis/context_plan.h"
#include "engine/analysis/method_comparison.h"
#include "engine/analysis/paired_analysis.h"
#include "engine/offload/offload_simulator.h"
#ifdef HIPSTUDIO_HAVE_GUI
#include "app/gui/gui_main.h"  // app sits above app/gui: `open` hands the capture to the GUI
#endif

namespace hipstudio::app {
namespace {

// SHA-256 of the weights: the llama2.c file itself, or for a Hugging Face directory the hash of
// "name sha256\n" lines over config.json and every *.safetensors file in name order.
std::string model_weights_sha256(const ModelSource& source) {
  namespace fs = std::filesystem;
  if (source.format == ModelFormat::Llama2c) return captures::sha256_file_hex(source.checkpoint);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(source.checkpoint)) {
    const std::string n = e.path().filename().string();
    if (n == "config.json" || (n.size() > 12 && n.compare(n.size() - 12, 12, ".safetensors") == 0)) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  // Each file's hash on a thread of its own (a checkpoint's shards are a few GB each).
  std::vector<std::string> hashes(names.size());
  hip::parallel_for(static_cast<int64_t>(names.size()), 0, [&](int64_t i, int) {
    hashes[static_cast<size_t>(i)] = captures::sha256_file_hex((fs::path(source.checkpoint) / names[static_cast<size_t>(i)]).string());
  });
  captures::Sha256 all;
  for (size_t i = 0; i < names.size(); ++i) all.update(names[i] + " " + hashes[i] + "\n");
  return all.finish_hex();
}

// "L:H:QB" -> TraceSpec.
captures::TraceSpec parse_trace(const std::string& text) {
  captures::TraceSpec t;
  long long l = 0, h = 0, q = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lld:%lld:%lld%c", &l, &h, &q, &tail) != 3)
    throw InputError("--trace '" + text + "': expected LAYER:HEAD:QUERY_BLOCK, e.g. 4:0:12");
  t.layer = l;
  t.head = h;
  t.query_block = q;
  return t;
}

// The layers whose Q/K/V and masks a capture stores: --inputs-layers, or by default every layer of a
// model of at most 8 layers (stories15M's 6) and else the first HiP layer, the middle one and the
// last. Throws InputError, before the weights load, for a layer outside the model, a trace on a
// layer not stored, or a trace's head or query block outside the model or the prompt.
std::vector<int64_t> capture_layers(const std::vector<int64_t>& asked, const ModelPreflight& model, const AnalysisOptions& options,
                                    const std::vector<captures::TraceSpec>& traces, int64_t prompt_tokens) {
  const int64_t layers = model.config.n_layers;
  std::vector<int64_t> kept = asked;
  if (kept.empty()) {
    if (layers <= 8) {
      for (int64_t l = 0; l < layers; ++l) kept.push_back(l);
    } else {
      kept = {std::min(options.hip.dense_layers, layers - 1), layers / 2, layers - 1};
    }
  }
  for (int64_t l : kept) check_layer_index(model, l, "--inputs-layers");
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  const int64_t query_blocks = (prompt_tokens + options.hip.hip.b_q - 1) / options.hip.hip.b_q;
  for (const captures::TraceSpec& t : traces) {
    const std::string spec = "--trace " + std::to_string(t.layer) + ":" + std::to_string(t.head) + ":" + std::to_string(t.query_block);
    check_layer_index(model, t.layer, spec);
    if (t.head < 0 || t.head >= model.config.n_heads)
      throw InputError(spec + " names head " + std::to_string(t.head) + " but the model has " + std::to_string(model.config.n_heads) +
                       " heads, 0.." + std::to_string(model.config.n_heads - 1) + ": name a head in that range");
    if (t.query_block < 0 || t.query_block >= query_blocks)
      throw InputError(spec + " names query block " + std::to_string(t.query_block) + " but the prompt's " +
                       std::to_string(prompt_tokens) + " tokens make " + std::to_string(query_blocks) + " blocks of b_q = " +
                       std::to_string(options.hip.hip.b_q) + ", 0.." + std::to_string(query_blocks - 1) + ": name a block in that range");
    if (!std::binary_search(kept.begin(), kept.end(), t.layer))
      throw InputError(spec + " is on a layer whose Q/K/V the capture does not store; add " + std::to_string(t.layer) +
                       " to --inputs-layers (or trace a stored layer)");
  }
  return kept;
}

// --model-hash: 64 hexadecimal digits (a SHA-256), or "none".
void check_model_hash(const std::string& hash) {
  if (hash.empty() || hash == "none") return;
  const bool hex = hash.size() == 64 && hash.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  if (!hex)
    throw InputError("--model-hash '" + hash + "' is not a SHA-256: give 64 hexadecimal digits (as sha256sum prints them), "
                     "'none', or leave it out to hash the weights");
}

// Refuses before the run when the analysis plus the capture built from it (masks, traces, offloading
// maps, the archive image) cannot fit in memory; run_paired_analysis checks the run alone.
void check_capture_fits(const Model& model, const std::string& prompt, const AnalysisOptions& options,
                        const captures::CaptureRequest& request, int64_t methods) {
  if (prompt.empty() || !model.tokenizer) return;  // the analysis refuses these with its own message
  auto has = [&](const char* view) { return std::find(request.views.begin(), request.views.end(), view) != request.views.end(); };
  AnalysisMemoryShape extras;
  RunMemoryShape shape = paired_analysis_shape(model, static_cast<int64_t>(model.tokenizer->encode(prompt, true).size()),
                                               options, extras);
  extras.capture = true;
  extras.methods = methods;
  extras.capture_masks = has("mask");
  extras.keep_inputs = request.keep_inputs;
  extras.offload_maps = has("cache");
  extras.traced_blocks = has("iterations") ? (request.traces.empty() ? extras.kept_layers : static_cast<int64_t>(request.traces.size())) : 0;
  const ContextPlan plan = plan_run(model.config, model.run, shape, options.context_limit);
  // The archive has no ZIP64: say what to leave out now rather than after the run.
  const uint64_t image = plan.memory.bytes(memory_line::kCaptureImage);
  if (image >= (uint64_t{1} << 32) - (uint64_t{64} << 20))
    throw InputError("this capture would hold about " + mib_text(image) + " (masks, traces and the Q/K/V of " +
                     std::to_string(extras.kept_layers) + " layers) but a capture file stays below 4 GiB: store fewer layers "
                     "(--inputs-layers), leave out the Q/K/V (--no-inputs) or the mask view (--views without mask), or "
                     "capture a shorter prompt");
}

// export's format: --format, or --out's extension when --format is not given. An --out whose
// extension is one of the formats must agree with --format (PNG bytes under an .svg name open as
// nothing); any other name (none, .bin, a FIFO, /dev/stdout) takes the format given.
std::string export_format(const std::string& format, const std::string& out) {
  std::string ext = std::filesystem::path(out).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  const bool known = ext == "png" || ext == "svg" || ext == "pdf" || ext == "csv" || ext == "json" || ext == "npy";
  if (format.empty()) {
    if (known) return ext;
    throw InputError("--format is required when --out (" + out + ") does not end in .png, .svg, .pdf, .csv, .json or .npy: give "
                     "--format, or name the file with the format's extension");
  }
  if (known && ext != format) {
    const std::string renamed = std::filesystem::path(out).replace_extension("." + format).string();
    throw InputError("--out " + out + " ends in ." + ext + " but --format is " + format + ": name the file " + renamed +
                     ", or give --format " + ext);
  }
  return format;
}

std::string default_report_path(const std::string& capture) {
  std::filesystem::path p(capture);
  p.replace_extension(".html");
  return p.string();
}

// The manifest's device ("cpu (1 threads), f32", as device_description wrote it) with the dtype once
// and "1 thread" in the singular; the dtype is added only when the device text lacks it.
std::string device_text(std::string device, const std::string& dtype) {
  const std::string plural = "(1 threads)";
  if (const size_t at = device.find(plural); at != std::string::npos) device.replace(at, plural.size(), "(1 thread)");
  const std::string tail = ", " + dtype;
  const bool has_dtype = device.size() >= tail.size() && device.compare(device.size() - tail.size(), tail.size(), tail) == 0;
  return has_dtype ? device : device + tail;
}

void print_summary(const nlohmann::json& m) {
  const auto& a = m["analysis"];
  auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; };
  std::printf("capture format %d, written by hipstudio %s on %s\n", m["format_version"].get<int>(),
              m["tool"]["version"].get<std::string>().c_str(), m["created"].get<std::string>().c_str());
  std::printf("model: %s (%s), sha256 %s\n", m["model"]["name"].get<std::string>().c_str(),
              m["model"]["architecture"].get<std::string>().c_str(),
              m["model"]["sha256"].get<std::string>().empty() ? "not recorded" : m["model"]["sha256"].get<std::string>().c_str());
  std::printf("device: %s\n", device_text(m["device"].get<std::string>(), m["dtype"].get<std::string>()).c_str());
  const auto& p = m["params"];
  std::printf("HiP: k %lld, b_q %lld, b_k %lld, b_sq %lld, b_sk %lld, sink %lld, window %lld, repr %g, l_d %lld, r_m %lld, decode %lld\n",
              p["k"].get<long long>(), p["b_q"].get<long long>(), p["b_k"].get<long long>(), p["b_sq"].get<long long>(),
              p["b_sk"].get<long long>(), p["sink"].get<long long>(), p["window"].get<long long>(), p["rho"].get<double>(),
              p["l_d"].get<long long>(), p["r_m"].get<long long>(), p["decode_steps"].get<long long>());
  std::printf("prompt: %zu tokens\n", m["prompt"]["tokens"].size());
  std::string views;
  for (const auto& v : m["views"]) views += (views.empty() ? "" : ",") + v.get<std::string>();
  std::printf("views: %s; %zu arrays, %zu images\n", views.c_str(), m["arrays"].size(), m["images"].size());
  std::printf("dense ppl %.4f | HiP ppl %.4f | KL %.5f | top-1 agreement %.4f\n", num(a["dense"]["ppl"]), num(a["hip"]["ppl"]),
              num(a["kl"]), num(a["top1_agreement"]));
  // Format 3: every method's summary, from the manifest (no array is read).
  if (m.contains("methods") && m["methods"].size() > 1)
    for (const auto& method : m["methods"]) {
      const auto& s = method["summary"];
      std::printf("method %s: ppl %.4f | KL %.5f | top-1 %.4f | recall %.4f | mass %.4f | out err %.4f\n",
                  method["name"].get<std::string>().c_str(), num(s["ppl"]), num(s["kl"]), num(s["top1_agreement"]),
                  num(s["recall"]), num(s["mass"]), num(s["out_rel_err"]));
    }
}

}  // namespace

void register_capture_commands(CLI::App& root) {
  struct CaptureArgs {
    ModelOptions model;
    AnalysisCliOptions run;
    std::string prompt;
    std::vector<std::string> views = captures::capture_view_names();
    std::vector<std::string> traces;
    std::string model_hash;
    bool no_images = false, no_inputs = false, quiet = false;
    std::vector<int64_t> inputs_layers;
    MethodOptions methods;
    std::string out;
  };
  auto args = std::make_shared<CaptureArgs>();
  CLI::App* cmd = root.add_subcommand("capture", "Run a paired dense vs HiP analysis and save it as a capture file (reopens without the model)");
  add_model_options(*cmd, args->model);
  args->run.add_to(*cmd);
  cmd->add_option("--prompt", args->prompt, "prompt text, or @FILE")->required();
  add_choice_list(*cmd, "--views", args->views, "views to capture, comma-separated", captures::capture_view_names());
  cmd->add_option("--trace", args->traces, "query block to trace, LAYER:HEAD:QUERY_BLOCK (repeatable; default: the last block of head 0 in each HiP layer)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            try {
              parse_trace(s);
              return "";
            } catch (const InputError& e) {
              return e.what();
            }
          },
          "", "trace"));
  cmd->add_option("--model-hash", args->model_hash, "SHA-256 of the weights to record, 64 hex digits (default: computed from the files; 'none' skips)");
  cmd->add_flag("--no-images", args->no_images, "do not store rendered images (reports render them from the data anyway)");
  cmd->add_flag("--no-inputs", args->no_inputs,
                "do not store the prompt's post-RoPE Q/K/V (smaller file; the GUI cannot recompute views from it)");
  add_number_list(*cmd, "--inputs-layers", args->inputs_layers,
                  "layers whose Q/K/V (and masks, traces, locality) the capture stores, comma-separated (default: every "
                  "layer of a model of at most 8 layers, else the first HiP layer, the middle one and the last)",
                  int64_t{0}, int64_t{4095});
  cmd->add_option("--out", args->out, "capture file to write (.hipcap)")->required();
  // As analyze --methods: random's seed is --seed, every other method's parameter a flag of its own.
  args->methods.add_options(*cmd, "hip", {"random"});
  CLI::Option* methods_option = cmd->get_option("--methods");
  add_quiet_flag(*cmd, args->quiet);
  cmd->callback([args, methods_option] {
    // Everything that can be checked without the weights is, so no refusal comes at 100%.
    CommandPaths paths;
    paths.output_files.push_back({"--out", args->out});
    add_text_input(paths, "--prompt", args->prompt);
    for (const PathArg& f : model_input_files(args->model)) paths.input_files.push_back(f);
    check_command_paths(paths);
    check_model_hash(args->model_hash);
    const std::string prompt = read_text_argument(args->prompt, "--prompt");
    captures::CaptureRequest request;
    request.views = args->views;
    request.render_images = !args->no_images;
    request.keep_inputs = !args->no_inputs;
    for (const std::string& t : args->traces) request.traces.push_back(parse_trace(t));
    AnalysisOptions options = args->run.analysis(args->model.context);
    options.keep_all_layers = false;
    const ModelPreflight preflight = preflight_model(args->model);
    args->run.hip.check_dense_layers(preflight.config);
    const int64_t prompt_tokens = static_cast<int64_t>(preflight.encode(prompt).size());
    check_fits_context(preflight, prompt_tokens, args->run.decode, "prompt", "--prompt", "--decode");
    options.keep_layers = capture_layers(args->inputs_layers, preflight, options, request.traces, prompt_tokens);
    // --methods: every listed method's side, the first the one the views are built from; without
    // it, HiP's paired run alone.
    std::vector<hip::methods::MethodChoice> methods;
    if (methods_option->count() > 0) methods = method_choices(args->methods, options);
    ProgressLine progress("capture", args->quiet);
    progress(0.0, "loading the model");
    auto model = args->model.load();
    captures::CaptureInfo info;
    info.run = {HIPSTUDIO_VERSION, model->source.display_name, model->config.architecture, device_description(model->run), prompt};
    info.dtype = dtype_name(model->run.dtype);
    info.model_sha256 = args->model_hash == "none" ? "" : args->model_hash;
    // The weights' hash (reading every file once more) runs beside the analysis, which is the device's work.
    std::future<std::string> weights_hash;
    if (args->model_hash.empty())
      weights_hash = std::async(std::launch::async, [source = model->source] { return model_weights_sha256(source); });
    check_capture_fits(*model, prompt, options, request, std::max<int64_t>(1, static_cast<int64_t>(methods.size())));
    std::vector<MethodRun> runs;
    if (methods.empty()) {
      PairedAnalysis analysis = run_paired_analysis(model, prompt, options, std::ref(progress));
      runs.push_back({analysis.options.hip.method, std::move(analysis)});
    } else {
      // The capture stores the first method's Q/K/V only: the later methods keep their masks.
      runs = run_method_comparison(model, prompt, options, methods, std::ref(progress), /*later_inputs=*/false);
    }
    if (weights_hash.valid()) info.model_sha256 = weights_hash.get();
    const PairedAnalysis& first = runs.front().analysis;
    if (model->tokenizer)
      captures::set_token_pieces(info, first, [&tok = *model->tokenizer](int32_t id) { return tok.token_text(id); });
    progress(1.0, "building the capture's views");
    const offload::OffloadConfig oc = args->run.offload(first, *model);
    const captures::Capture capture = captures::build_capture(std::move(runs), info, request, &oc);
    progress(1.0, "writing " + args->out);
    // Streamed entry by entry; a device or FIFO too (captures/atomic_file.h).
    const uint64_t written = captures::write_capture(args->out, capture);
    progress(1.0, "done");
    progress.finish();
    const PairedAnalysis& a = capture.analysis;
    std::printf("dense ppl %.4f | HiP ppl %.4f | KL %.5f | top-1 agreement %.4f | decode steps %zu, mask refreshes %lld\n", a.dense.ppl,
                a.hip.ppl, a.kl, a.top1_agreement, a.decode.size(), static_cast<long long>(a.mask_refreshes));
    for (size_t i = 1; i < capture.methods.size(); ++i) {
      const captures::CapturedMethod& m = capture.methods[i];
      std::printf("%s: ppl %.4f | KL %.5f | top-1 agreement %.4f | mask refreshes %lld\n", m.choice.name.c_str(), m.side.ppl, m.kl,
                  m.top1_agreement, static_cast<long long>(m.mask_refreshes));
    }
    std::fprintf(stderr, "wrote %s (%lld bytes)\n", args->out.c_str(), static_cast<long long>(written));
  });

  struct ReportArgs {
    std::string capture, out, png_dir, csv_dir, npy_dir, json_out, trace_out, tile_dir, figure, style = "paper";
    int64_t mask_px = 512, tile = 4096;
  };
  auto rargs = std::make_shared<ReportArgs>();
  CLI::App* rep = root.add_subcommand("report", "Turn a capture into a self-contained HTML report (and PNG/SVG/PDF, CSV, .npy, JSON, Chrome trace files)");
  rep->add_option("capture", rargs->capture, "capture file")->required();
  rep->add_option("--out", rargs->out, "HTML report to write (default: the capture's name with .html)");
  rep->add_option("--png-dir", rargs->png_dir, "also write the figures (PNG masks, SVG plots and each SVG as PDF) into this folder");
  rep->add_option("--figure", rargs->figure, "write just this figure into --png-dir, instead of the report: a file name "
                                             "--png-dir holds (mask_L3_H0.png, latency.svg, latency.pdf) or a view (latency)");
  rep->add_option("--csv-dir", rargs->csv_dir, "also write the CSV tables into this folder");
  rep->add_option("--npy-dir", rargs->npy_dir, "also write every array as .npy into this folder");
  add_number(*rep, "--mask-px", rargs->mask_px, "longest side of the mask images in pixels (max-pooled above it)", int64_t{16},
             int64_t{16384});
  rep->add_option("--mask-tiles", rargs->tile_dir, "also write every layer's and head's mask at full detail, in PNG tiles, into this folder");
  add_number(*rep, "--tile", rargs->tile, "tile side in pixels for --mask-tiles", int64_t{16}, int64_t{16384});
  rep->add_option("--json", rargs->json_out, "also write the metrics in the `analyze` JSON schema");
  rep->add_option("--chrome-trace", rargs->trace_out, "also write the latency as Chrome trace events (Perfetto, chrome://tracing)");
  add_choice(*rep, "--style", rargs->style,
             "figures (in the report and --png-dir): paper (light, for print, whatever the GUI's theme) or dark (the GUI's screen colours)",
             {"paper", "dark"});
  rep->callback([rargs] {
    if (!rargs->figure.empty()) {
      // One figure instead of the report: the options that write other files would do nothing.
      if (rargs->png_dir.empty()) throw InputError("--figure " + rargs->figure + " needs --png-dir DIR: the folder to write it into");
      for (const auto& [option, value] : {std::pair<const char*, const std::string*>{"--out", &rargs->out}, {"--csv-dir", &rargs->csv_dir},
                                          {"--npy-dir", &rargs->npy_dir}, {"--mask-tiles", &rargs->tile_dir},
                                          {"--json", &rargs->json_out}, {"--chrome-trace", &rargs->trace_out}})
        if (!value->empty())
          throw InputError(std::string(option) + " with --figure: --figure writes one figure and no report; leave out " + option +
                           ", or --figure for the whole report");
      CommandPaths paths;
      paths.input_files.push_back({"the capture", rargs->capture});
      paths.output_folders.push_back({"--png-dir", rargs->png_dir});
      check_command_paths(paths);
      captures::CaptureReadOptions read;
      read.inputs = false;  // no figure is drawn from the Q/K/V
      const captures::Capture c = captures::read_capture(rargs->capture, read);
      captures::FigureOptions figures;
      figures.mask_px = rargs->mask_px;
      figures.style = rargs->style;
      figures.only = rargs->figure;
      for (const std::string& path : captures::write_figure_exports(c, rargs->png_dir, figures)) std::printf("wrote %s\n", path.c_str());
      return;
    }
    const std::string out = rargs->out.empty() ? default_report_path(rargs->capture) : rargs->out;
    // Before reading anything: no output may be the capture (or another output), every folder must take files.
    CommandPaths paths;
    paths.input_files.push_back({"the capture", rargs->capture});
    paths.output_files.push_back({rargs->out.empty() ? "the report (the capture's name with .html; choose another with --out)" : "--out", out});
    if (!rargs->json_out.empty()) paths.output_files.push_back({"--json", rargs->json_out});
    if (!rargs->trace_out.empty()) paths.output_files.push_back({"--chrome-trace", rargs->trace_out});
    for (const auto& [option, dir] : {std::pair<const char*, const std::string*>{"--png-dir", &rargs->png_dir},
                                      {"--csv-dir", &rargs->csv_dir}, {"--npy-dir", &rargs->npy_dir}, {"--mask-tiles", &rargs->tile_dir}})
      if (!dir->empty()) paths.output_folders.push_back({option, *dir});
    check_command_paths(paths);
    // The report and its figures and tables need no Q/K/V; --npy-dir writes them too.
    captures::CaptureReadOptions read;
    read.inputs = !rargs->npy_dir.empty();
    const captures::Capture c = captures::read_capture(rargs->capture, read);
    captures::FigureOptions figures;
    figures.mask_px = rargs->mask_px;
    figures.style = rargs->style;
    captures::write_file_atomic(out, captures::html_report(c, figures));
    std::fprintf(stderr, "wrote %s\n", out.c_str());
    auto note = [](const std::vector<std::string>& paths, const std::string& dir) {
      std::fprintf(stderr, "wrote %zu files into %s\n", paths.size(), dir.c_str());
    };
    if (!rargs->png_dir.empty()) note(captures::write_figure_exports(c, rargs->png_dir, figures), rargs->png_dir);
    if (!rargs->tile_dir.empty()) note(captures::write_mask_tiles(c, rargs->tile_dir, rargs->tile), rargs->tile_dir);
    if (!rargs->csv_dir.empty()) note(captures::write_csv_exports(c, rargs->csv_dir), rargs->csv_dir);
    if (!rargs->npy_dir.empty()) note(captures::write_npy_exports(c, rargs->npy_dir), rargs->npy_dir);
    if (!rargs->json_out.empty()) {
      captures::write_file_atomic(rargs->json_out, captures::capture_analysis_json(c).dump(1) + "\n");
      std::fprintf(stderr, "wrote %s\n", rargs->json_out.c_str());
    }
    if (!rargs->trace_out.empty()) {
      captures::write_file_atomic(rargs->trace_out, captures::chrome_trace(c).dump() + "\n");
      std::fprintf(stderr, "wrote %s\n", rargs->trace_out.c_str());
    }
    std::printf("report: %s\n", out.c_str());
  });

  struct ExportArgs {
    std::string capture, out, method;
    captures::ExportRequest request;
  };
  auto eargs = std::make_shared<ExportArgs>();
  CLI::App* exp = root.add_subcommand("export", "Write one view of a capture as PNG, SVG, PDF, CSV, JSON or .npy");
  exp->add_option("capture", eargs->capture, "capture file")->required();
  exp->add_option("--what", eargs->request.what, std::string("what to export:\n") + captures::export_choices())->required();
  add_choice(*exp, "--format", eargs->request.format,
             "png, svg, pdf (every svg figure as a one-page PDF), csv, json or npy (default: --out's extension); --out's "
             "extension, when it is one of these, must agree",
             {"png", "svg", "pdf", "csv", "json", "npy"});
  add_number(*exp, "--layer", eargs->request.layer, "layer (default: the last)", int64_t{0}, int64_t{4095});
  add_number(*exp, "--head", eargs->request.head, "head (default: all where an array allows it, else 0)", int64_t{0}, int64_t{4095});
  add_number(*exp, "--delta", eargs->request.delta, "locality svg: the histogram of this Delta", int64_t{1}, int64_t{1} << 20);
  // 16384 px a side is 1 GiB of RGBA: larger asks are refused here rather than by the allocator.
  add_number(*exp, "--px", eargs->request.px, "mask png: longest side in pixels, max-pooled above it (0: one pixel per block pair)",
             int64_t{0}, int64_t{16384});
  add_choice(*exp, "--style", eargs->request.style,
             "figures: paper (light, for print, whatever the GUI's theme) or dark (the GUI's screen colours)",
             {"paper", "dark"});
  exp->add_option("--name", eargs->request.name, "--what array: the array's name, e.g. masks/L3/hip/blocks");
  exp->add_option("--method", eargs->method,
                  "the method whose side to export (its mask, metrics, nll, latency; default: the capture's first, as "
                  "`open --print` lists them)");
  exp->add_option("--out", eargs->out, "file to write")->required();
  exp->callback([eargs] {
    eargs->request.format = export_format(eargs->request.format, eargs->out);
    CommandPaths paths;
    paths.input_files.push_back({"the capture", eargs->capture});
    paths.output_files.push_back({"--out", eargs->out});
    check_command_paths(paths);
    // A method the capture does not hold is refused from the manifest, before the arrays are read.
    if (!eargs->method.empty())
      captures::require_method_held(captures::manifest_method_names(captures::read_capture_manifest(eargs->capture)), eargs->method,
                                    eargs->capture);
    // One stored array is copied out as it is; the other views need no Q/K/V.
    if (eargs->request.what == "array" && eargs->request.format == "npy") {
      captures::write_file_atomic(eargs->out, captures::read_capture_array(eargs->capture, eargs->request.name));
      std::fprintf(stderr, "wrote %s\n", eargs->out.c_str());
      return;
    }
    captures::CaptureReadOptions read;
    read.inputs = false;
    captures::Capture c = captures::read_capture(eargs->capture, read);
    if (!eargs->method.empty()) c = captures::capture_of_method(std::move(c), eargs->method);
    captures::write_file_atomic(eargs->out, captures::export_view(c, eargs->request));
    std::fprintf(stderr, "wrote %s\n", eargs->out.c_str());
  });

  auto open_path = std::make_shared<std::string>();
#ifdef HIPSTUDIO_HAVE_GUI
  CLI::App* open = root.add_subcommand("open", "Show a capture read-only in the GUI, with its parameters (--print, or no display: "
                                               "validate it and print its parameters and metrics)");
#else
  CLI::App* open = root.add_subcommand("open", "Show a capture: validates it and prints its parameters and metrics "
                                               "(this build has no GUI)");
#endif
  open->add_option("capture", *open_path, "capture file")->required();
  open->add_flag("--print", "print the parameters and metrics and exit, without opening the GUI");
  auto compare_path = std::make_shared<std::string>();
  open->add_option("--compare", *compare_path,
                   "a second capture B: the GUI shows both side by side; --print prints A's and B's numbers per layer and B - A");
  open->callback([open, open_path, compare_path] {
#ifdef HIPSTUDIO_HAVE_GUI
    if (gui::open_shows_gui(*open)) return;  // main() opens the GUI on it
#else
    (void)open;
#endif
    CommandPaths paths;
    paths.input_files.push_back({"the capture", *open_path});
    if (!compare_path->empty()) paths.input_files.push_back({"--compare", *compare_path});
    check_command_paths(paths);
    // Validate the file before describing it: every array but the prompt's Q/K/V, which the
    // summary and the comparison do not use (most of a long capture's bytes are there).
    captures::CaptureReadOptions no_inputs;
    no_inputs.inputs = false;
    const captures::Capture a = captures::read_capture(*open_path, no_inputs);
    if (!compare_path->empty()) {
      const captures::Capture b = captures::read_capture(*compare_path, no_inputs);
      std::fputs(captures::comparison_text(captures::compare_captures(a.analysis, b.analysis), *open_path, *compare_path).c_str(), stdout);
      return;
    }
    print_summary(captures::read_capture_manifest(*open_path));
    std::fprintf(stderr, "(`hipstudio report` makes an HTML report of it)\n");
  });
}

}  // namespace hipstudio::app
