#include "kernels/methods/selection_method.h"

#include <cmath>
#include <set>
#include <sstream>

namespace hipstudio::hip::methods {

// The registry, in display order: one line per method; the line's file defines <name>_method().
#define HIPSTUDIO_SELECTION_METHODS(X) \
  X(hip)                               \
  X(oracle)                            \
  X(random)                            \
  X(streaming)                         \
  X(quest)                             \
  X(vslash)

#define HIPSTUDIO_DECLARE_METHOD(name) const SelectionMethod& name##_method();
HIPSTUDIO_SELECTION_METHODS(HIPSTUDIO_DECLARE_METHOD)
#undef HIPSTUDIO_DECLARE_METHOD

namespace {

std::string number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

std::string param_list(const SelectionMethod& m) {
  if (m.params.empty()) return "none";
  std::string out;
  for (const MethodParam& p : m.params) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace

const std::vector<const SelectionMethod*>& selection_methods() {
#define HIPSTUDIO_LIST_METHOD(name) &name##_method(),
  static const std::vector<const SelectionMethod*> methods = {HIPSTUDIO_SELECTION_METHODS(HIPSTUDIO_LIST_METHOD)};
#undef HIPSTUDIO_LIST_METHOD
  return methods;
}

std::vector<std::string> selection_method_names() {
  std::vector<std::string> names;
  for (const SelectionMethod* m : selection_methods()) names.push_back(m->name);
  return names;
}

std::string selection_method_list() {
  std::string out;
  for (const SelectionMethod* m : selection_methods()) out += (out.empty() ? "" : ", ") + m->name;
  return out;
}

std::string method_param_flag(const MethodParam& param) {
  std::string flag = "--" + param.name;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

const SelectionMethod& find_selection_method(const std::string& name) {
  for (const SelectionMethod* m : selection_methods())
    if (m->name == name) return *m;
  throw MethodError("unknown selection method '" + name + "' (valid: " + selection_method_list() + ")");
}

std::vector<const SelectionMethod*> parse_method_list(const std::string& csv) {
  std::vector<const SelectionMethod*> out;
  std::set<std::string> seen;
  std::string item;
  std::istringstream s(csv);
  bool any = false;
  while (std::getline(s, item, ',')) {
    any = true;
    if (item.empty()) throw MethodError("empty method name in '" + csv + "' (valid: " + selection_method_list() + ")");
    if (!seen.insert(item).second) throw MethodError("method '" + item + "' is listed twice in '" + csv + "'");
    out.push_back(&find_selection_method(item));
  }
  if (!any || csv.back() == ',')
    throw MethodError("empty method name in '" + csv + "' (valid: " + selection_method_list() + ")");
  return out;
}

MethodValues default_values(const SelectionMethod& method) {
  MethodValues v;
  for (const MethodParam& p : method.params) v[p.name] = p.fallback;
  return v;
}

MethodValues resolve_values(const SelectionMethod& method, const MethodValues& given, const HipParams& hp) {
  MethodValues v = default_values(method);
  for (const auto& [name, value] : given) {
    if (!v.count(name)) {
      throw MethodError("unknown parameter '" + name + "' of method " + method.name + " (valid: " +
                        param_list(method) + ")");
    }
    v[name] = value;
  }
  for (const MethodParam& p : method.params) {
    const double x = v[p.name];
    if (!(x >= p.lo && x <= p.hi)) {  // also NaN
      throw MethodError(p.name + " (" + number_text(x) + ") must be in [" + number_text(p.lo) + ", " +
                        number_text(p.hi) + "] (" + method_param_flag(p) + ": " + p.help + ")");
    }
    if (p.kind == MethodParamKind::kInteger && x != std::floor(x))
      throw MethodError(p.name + " (" + number_text(x) + ") must be an integer");
  }
  if (method.problem) {
    const std::string problem = method.problem(hp, v);
    if (!problem.empty()) throw MethodError(method.name + ": " + problem);
  }
  return v;
}

double method_value(const MethodValues& values, const std::string& name) {
  const auto it = values.find(name);
  if (it == values.end()) throw MethodError("no value for method parameter '" + name + "'");
  return it->second;
}

int64_t method_int(const MethodValues& values, const std::string& name) {
  return static_cast<int64_t>(method_value(values, name));
}

void validate_selection(const SelectionMethod& method, const SelectionContext& ctx) {
  validate_hip_params(ctx.hip);
  // Resolving again checks ranges and the method's rules; the values must already be complete.
  const MethodValues resolved = resolve_values(method, ctx.values, ctx.hip);
  if (resolved.size() != ctx.values.size()) {
    throw MethodError("method " + method.name + " got " + std::to_string(ctx.values.size()) + " of its " +
                      std::to_string(resolved.size()) + " parameters (" + param_list(method) +
                      "): pass resolve_values' result");
  }
}

MaskResult select_masks(const SelectionMethod& method, const AttentionInputs& in, const SelectionContext& ctx) {
  validate_selection(method, ctx);
  validate_attention_inputs(in, false);
  const std::shared_ptr<const MethodState> state = method.prompt_state ? method.prompt_state(in, ctx) : nullptr;
  return method.reference(in, ctx, state.get());
}

std::shared_ptr<const MethodState> decode_state(const SelectionMethod& method, const AttentionInputs& prompt,
                                                const SelectionContext& ctx) {
  validate_selection(method, ctx);
  validate_attention_inputs(prompt, false);
  return method.prompt_state ? method.prompt_state(prompt, ctx) : nullptr;
}

MaskResult select_for_decode(const SelectionMethod& method, const AttentionInputs& rows, const SelectionContext& ctx,
                             const MethodState* state) {
  validate_selection(method, ctx);
  validate_attention_inputs(rows, false);
  if (method.prompt_state && !state) {
    throw MethodError("method " + method.name + " re-selects from the prompt's state: pass decode_state(prompt)");
  }
  return method.reference(rows, ctx, state);
}

void validate_choice(const MethodChoice& choice, const HipParams& p) {
  SelectionContext ctx = choice_context(choice, p, 0);
  validate_selection(find_selection_method(choice.name), ctx);
}

SelectionContext choice_context(const MethodChoice& choice, const HipParams& p, int64_t layer, int threads) {
  SelectionContext ctx;
  ctx.hip = p;
  ctx.values = choice.values;
  ctx.layer = layer;
  ctx.threads = threads;
  return ctx;
}

}  // namespace hipstudio::hip::methods
