// view_labels.cpp: the words and keys the views share (see views.h): what a ring tile's trace
// section means, which step of which phase is shown, and a row of legend keys (swatch + words).
// What it is not: the trace's format. The section strings stay the trace's own
// (reference/modes/ring_schedule.h: "diagonal" | "lower" | "upper" | "skipped"; `cplab check` reads
// them); only what the views print for them is decided here.
#include <algorithm>

#include "views.h"

namespace cplab::viz {

std::string section_label(const std::string& section, bool brief) {
  // "lower" / "upper" name the KV block's owner j against the computing rank r (ring_schedule.h
  // ring_tile), not a side of the diagonal: say so
  if (section == "diagonal") return brief ? "j=r" : "own KV (j=r)";
  if (section == "lower") return brief ? "j<r" : "KV of a lower rank (j<r)";
  if (section == "upper") return brief ? "j>r" : "KV of a higher rank (j>r)";
  if (section == "skipped") return brief ? "skip" : "skipped (no visible pair)";
  return section;
}

std::string section_legend() {
  return "tile labels: r = the rank computing the tile, j = the rank whose KV block it holds: j=r its own block (trace section "
         "'diagonal'), j<r a lower rank's block ('lower'), j>r a higher rank's block ('upper'); not above or below the diagonal";
}

std::string step_label(const RunModel& m, int si) {
  if (m.steps.empty()) return "no steps";
  const size_t i = static_cast<size_t>(std::clamp<int>(si, 0, static_cast<int>(m.steps.size()) - 1));
  const auto [phase, step] = m.steps[i];
  size_t k = 0, n = 0;  // the step's place among its phase's steps, and their number
  for (size_t j = 0; j < m.steps.size(); ++j)
    if (m.steps[j].first == phase) k += j < i ? 1 : 0, n += 1;
  const std::string words = phase == Phase::fwd ? "forward" : "backward";
  return to_string(phase) + " step " + std::to_string(step) + " (" + std::to_string(k + 1) + " of " + std::to_string(n) + " " + words +
         " steps)";
}

float draw_key_legend(Scene& s, float x, float y, float w, const std::vector<LegendKey>& keys) {
  float cx = x, cy = y;
  for (const LegendKey& k : keys) {
    const float kw = 14 + text_width(k.label) + 14;
    if (cx > x && cx + kw > x + w) cx = x, cy += kLineH + 4;  // wrap to the next row
    s.rect(cx, cy + 2, cx + 10, cy + 12, k.fill, k.stroke, "legend_key");
    s.prims.back().info = k.label;
    if (k.cross) {
      s.line(cx, cy + 2, cx + 10, cy + 12, k.stroke);
      s.line(cx + 10, cy + 2, cx, cy + 12, k.stroke);
    }
    s.text(cx + 14, cy, k.label, kLight, "legend_text");
    cx += kw;
  }
  return cy + kLineH + 4 - y;
}

}  // namespace cplab::viz
