#include "app/gui/method_multiples.h"

#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "app/gui/widgets.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::gui {

namespace hm = hip::methods;

bool method_mask_current(const PanelContext& ctx, const MethodMaskView& v) {
  if (!view_stale(ctx, kStageMethodMasks)) return true;
  const auto& own = ctx.snap.masks;
  const auto& a = ctx.snap.analysis;
  return ctx.state.invalid.empty() && v.masks && v.masks->source && own && a && !view_stale(ctx, kStageMasks) &&
         v.masks->layer == own->layer && v.masks->source->prefill_identity() == a->prefill_identity();
}

double head_recall(const LayerMaskSnapshot& m, int64_t head) {
  if (!m.has_oracle || m.recall.empty() || head < 0 || head >= m.hip.heads) return NAN;
  double sum = 0;
  for (int64_t qb = 0; qb < m.hip.query_blocks; ++qb) sum += m.recall[static_cast<size_t>(m.hip.index(head, qb))];
  return m.hip.query_blocks > 0 ? sum / static_cast<double>(m.hip.query_blocks) : NAN;
}

std::string method_mask_pending_text(const PanelContext& ctx) {
  const std::string& error = ctx.snap.error[kStageMethodMasks];
  if (error.empty()) return "computing...";
  if (error == "cancelled") return "cancelled: a change of any setting computes it";
  return "not computed: " + error;
}

std::string method_title(const std::string& name) {
  for (const hm::SelectionMethod* m : hm::selection_methods())
    if (m->name == name) return m->title;
  return name;
}

void MethodMultiples::draw(PanelContext& ctx) {
  AppState& s = ctx.state;
  const float fh = ImGui::GetFontSize();
  ImGui::TextUnformatted("All methods, this head:");
  for (const hm::SelectionMethod* m : hm::selection_methods()) {
    ImGui::SameLine();
    auto& list = s.compare_multiples;
    const auto at = std::find(list.begin(), list.end(), m->name);
    bool on = at != list.end();
    if (ImGui::Checkbox((m->name + "##multiple").c_str(), &on)) {
      if (on) list.push_back(m->name);
      else list.erase(at);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n%s\n%s", m->title.c_str(), m->citation.c_str(), m->rule.c_str());
  }
  if (s.compare_multiples.empty()) return;
  const float avail = ImGui::GetContentRegionAvail().x;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const auto n = static_cast<float>(s.compare_multiples.size());
  const float cell = std::clamp((avail - gap * (n - 1)) / n, fh * 9, fh * 16);
  float x = 0;
  // In the registry's order, whatever the order the boxes were checked in.
  for (const hm::SelectionMethod* method : hm::selection_methods()) {
    const std::string& name = method->name;
    if (std::find(s.compare_multiples.begin(), s.compare_multiples.end(), name) == s.compare_multiples.end()) continue;
    if (x > 0 && x + cell <= avail) ImGui::SameLine();
    else x = 0;
    x += cell + gap;
    ImGui::BeginGroup();
    ImGui::PushID(name.c_str());
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + cell);
    std::shared_ptr<const LayerMaskSnapshot> m;
    std::string why;
    bool stale = false;
    if (name == "hip" && ctx.snap.masks && ctx.snap.masks->method == "hip") {
      m = ctx.snap.masks;
      stale = view_stale(ctx, kStageMasks);
    } else if (const MethodMaskView* v = ctx.snap.method_masks ? ctx.snap.method_masks->find(name) : nullptr) {
      m = v->masks;
      why = v->error;
      stale = !method_mask_current(ctx, *v);
    }
    if (m && m->source) {
      StaleScope grey(stale);
      const int64_t head = std::min<int64_t>(s.head, m->hip.heads - 1);
      const double recall = head_recall(*m, head);
      // The name and the head's recall on one short line (a small multiple is narrow).
      if (std::isfinite(recall)) ImGui::Text("%s %.3f", name.c_str(), recall);
      else ImGui::TextUnformatted(name.c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: recall %.3f vs oracle, head %lld", method_title(name).c_str(), recall,
                                                    static_cast<long long>(head));
      MaskCanvas& canvas = canvases_[name];
      const MaskCanvasEvents ev = canvas.draw("##multiple_mask", m, *m->source, head, s.mask_view, cell, false, -1, ctx.theme);
      if (ev.clicked) s.compare_right = name;  // a click shows it on the right side, linked
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: click to show it on the right, linked", method_title(name).c_str());
    } else {
      ImGui::TextUnformatted(name.c_str());
      if (!why.empty()) warn_text(why, ctx.theme);
      else ImGui::TextDisabled("%s", method_mask_pending_text(ctx).c_str());
      ImGui::Dummy(ImVec2(cell, std::max(0.0f, cell - 2 * fh)));
    }
    ImGui::PopTextWrapPos();
    ImGui::PopID();
    ImGui::EndGroup();
  }
}

}  // namespace hipstudio::gui
