#pragma once
// The registry of block-selection methods: HiP and the methods it is compared with (the exact
// oracle, the random baseline of theorem 1, StreamingLLM, Quest, MInference's vertical-slash).
// Every entry declares once its name, its parameters (range, help, default: what the CLI, the GUI
// sliders, settings, JSON and capture manifests read) and its float64 CPU reference; a method
// with a tensor implementation (LibTorch ops, used on CUDA) is also listed by the same name in
// kernels/methods/torch/tensor_selection.h. Callers iterate the registry and key every view,
// metric and capture array by name, never by position. docs/METHODS.md gives each rule and how to
// add a method (one file, one line in selection_method.cpp's list).
//
// Every method returns the project's mask (hip::MaskResult, the shape of make_empty_mask): per
// (head, query block) at most k / b_k key blocks of size b_k, ascending, -1 padded, inside HiP's
// range, with dense_from per query block; sink, dense tail and causality as for HiP. A method
// choosing blocks of another size b (Quest's pages) writes each as its b / b_k key blocks
// (method_mask.h). Grouped-query attention: query head h is scored with its KV head, as HiP does.
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"

namespace hipstudio::hip::methods {

// An unknown method or parameter, or a value out of range; what() names the valid ones, e.g.
// "unknown selection method 'h2o' (valid: hip, oracle, random, streaming, quest, vslash)".
class MethodError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class MethodParamKind { kInteger, kReal };

// One parameter of a method, beyond the run's HipParams (k, b_q, b_k, b_sq, sink, window, ...,
// shared by every method: the budget they are compared at).
struct MethodParam {
  std::string name;  // snake_case key of settings, JSON and capture manifests: "quest_page"
  MethodParamKind kind = MethodParamKind::kInteger;
  double lo = 0.0, hi = 0.0;  // inclusive range; integers stay within 2^53 (exact in a double)
  double fallback = 0.0;      // the default
  std::string help;           // one line for --help and the GUI tooltip
};

// The command-line flag of a parameter: "--" + name with '-' for '_' ("--quest-page").
std::string method_param_flag(const MethodParam& param);

// Parameter name -> value. Resolved values (resolve_values) hold every parameter of the method.
using MethodValues = std::map<std::string, double>;

// What a method keeps from the prompt for its decode refreshes (vslash: V and S); methods that
// re-select from the current query alone keep none.
struct MethodState {
  virtual ~MethodState() = default;
};

// Everything a selection call reads besides the inputs.
struct SelectionContext {
  HipParams hip;         // the run's budget and blocks: k, b_q, b_k, b_sq, b_sk, sink, window, rho, causal
  MethodValues values;   // the method's resolved parameters
  int64_t layer = 0;     // the layer (random: its seed is random_seed + layer, as the views seed it)
  int threads = 0;       // CPU reference threads, 0: all; masks never depend on it
};

struct SelectionMethod {
  std::string name;      // registry key: "quest"
  std::string title;     // for tables and legends: "Quest"
  std::string citation;  // "Tang et al. 2024, Quest: Query-Aware Sparsity for Efficient Long-Context LLM Inference"
  std::string rule;      // the selection rule in one sentence (help text, tooltips)
  std::vector<MethodParam> params;
  // b, the size in tokens of the blocks the method chooses (b_k for all but Quest's pages).
  int64_t (*block_tokens)(const HipParams& p, const MethodValues& v) = nullptr;
  // Rules between the method's values and the run's params beyond each value's range ("" when
  // they hold), e.g. "quest_page (12) must be a multiple of b_k (8)". Null: none.
  std::string (*problem)(const HipParams& p, const MethodValues& v) = nullptr;
  // The float64 CPU reference over every (head, query block) of `in` (prefill rows, or a decode
  // refresh's rows with `state` from prompt_state). Inputs and values are validated before.
  MaskResult (*reference)(const AttentionInputs& in, const SelectionContext& ctx, const MethodState* state) = nullptr;
  // The state a decode refresh needs from the prompt `prompt` (null function: the method needs none).
  std::shared_ptr<const MethodState> (*prompt_state)(const AttentionInputs& prompt, const SelectionContext& ctx) = nullptr;
};

// Every method, in display order (hip first).
const std::vector<const SelectionMethod*>& selection_methods();
std::vector<std::string> selection_method_names();
std::string selection_method_list();  // "hip, oracle, random, streaming, quest, vslash"

// The method of that name; MethodError naming the valid ones otherwise.
const SelectionMethod& find_selection_method(const std::string& name);
// "hip,streaming,quest" (a --methods value) -> the methods in that order; an unknown, empty or
// repeated name is a MethodError.
std::vector<const SelectionMethod*> parse_method_list(const std::string& csv);

// Every parameter at its default.
MethodValues default_values(const SelectionMethod& method);
// Defaults overridden by `given`; an unknown name (MethodError listing the method's parameters),
// a value out of its range, a non-integral integer or a broken method rule is a MethodError.
MethodValues resolve_values(const SelectionMethod& method, const MethodValues& given, const HipParams& p);
// A resolved value; MethodError when the method has no such parameter.
double method_value(const MethodValues& values, const std::string& name);
int64_t method_int(const MethodValues& values, const std::string& name);

// The checks every entry point runs: HiP's rules (HipParamError), the values (MethodError) and,
// with `in`, the inputs (AttentionInputError).
void validate_selection(const SelectionMethod& method, const SelectionContext& ctx);

// Prefill: the mask of every (head, query block) of `in` (the state a method needs comes from `in`).
MaskResult select_masks(const SelectionMethod& method, const AttentionInputs& in, const SelectionContext& ctx);
// What select_for_decode needs from the prompt; null for methods that keep nothing.
std::shared_ptr<const MethodState> decode_state(const SelectionMethod& method, const AttentionInputs& prompt,
                                                const SelectionContext& ctx);
// A decode refresh (every r_m steps): the mask of the current query rows `rows` (usually one row,
// with its position; k: the whole cache), re-selected by the method's rule for those rows:
// streaming the most recent blocks, quest the current query's bounds, vslash the prompt's V and S
// with S sliding with the position, HiP / oracle / random as at prefill. `state`: decode_state of
// the prompt (MethodError when a method that needs one gets null).
MaskResult select_for_decode(const SelectionMethod& method, const AttentionInputs& rows, const SelectionContext& ctx,
                             const MethodState* state);

// What a run's sparse side selects with: a registry name and that method's resolved values
// (resolve_values; empty for hip and the oracle). The model's sparse layers
// (engine/backends/hip_attention.h) and their views take their masks from it.
struct MethodChoice {
  std::string name = "hip";
  MethodValues values;
  bool is_hip() const { return name == "hip"; }
};
// MethodError unless `choice` names a method and holds exactly its resolved values under `p`.
void validate_choice(const MethodChoice& choice, const HipParams& p);
// The context of `choice`'s selection on one layer.
SelectionContext choice_context(const MethodChoice& choice, const HipParams& p, int64_t layer, int threads = 0);

}  // namespace hipstudio::hip::methods
