#pragma once
// What each layer of a HiP run computes, for the pickers, headers, legends and reports that show a
// layer (docs/MODELS.md, "HiP on windowed and soft-capped layers"): a sliding-window layer keeps its
// window attention on both sides; l_d counts full-attention layers, and the first l_d of them stay
// dense; HiP replaces every later full-attention layer.
//
// Whether HiP replaces a layer is the engine's decision, read here from the analysis
// (LayerQuality::dense, which the analysis sets from hip_replaces_layer); the layer's window
// (LayerQuality::math, from ModelConfig::layer_window) only says which dense layers are windowed.
// No second rule.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/analysis/paired_result.h"

namespace hipstudio::captures {

enum class LayerKind {
  kWindow,      // a sliding-window layer: its window, dense and HiP alike
  kDense,       // a full-attention layer among the first l_d: dense on both sides
  kHip,         // a full-attention layer HiP replaces
};

struct LayerKinds {
  std::vector<LayerKind> kind;   // (n_layers)
  std::vector<int64_t> window;   // (n_layers) W of each windowed layer, else 0
  int64_t dense_layers = 0;      // l_d
  int64_t full_layers = 0;       // full-attention layers

  int64_t layers() const { return static_cast<int64_t>(kind.size()); }
  // kHip for a layer outside the list (a run with no per-layer results draws every layer as HiP's).
  LayerKind at(int64_t layer) const;
  bool hip(int64_t layer) const { return at(layer) == LayerKind::kHip; }
  // "window 4096 (dense on both sides)", "dense (under l_d)", "HiP".
  std::string text(int64_t layer) const;
  // For pickers and table cells: "window 4096", "dense", "HiP".
  std::string short_text(int64_t layer) const;
  // "l_d 2 of 16 full-attention layers".
  std::string dense_layers_text() const;
  // Every layer by kind, runs of layers as ranges: "HiP: 2-5, 7 (5 of 8 layers); window 4096 (dense
  // on both sides): 0, 6; dense (under l_d): 1".
  std::string summary() const;
};

// From the analysis' per-layer results: each layer's window from its LayerQuality::math (a live
// run's from the model, a capture's from analysis/layer_math; a capture without it is of a plain
// architecture).
LayerKinds layer_kinds(const PairedAnalysis& analysis);

}  // namespace hipstudio::captures
