// render.h: a Scene (viz/scene/scene.h) into Dear ImGui draw calls.
// What it is not: the scene's content; this only maps primitives to ImDrawList calls.
#pragma once

#include <imgui.h>

#include <string>

#include "scene.h"

namespace cplab::viz {

// draws the scene with its top-left corner at origin (screen pixels)
void draw_scene(const Scene& s, ImDrawList* dl, ImVec2 origin);

// Text from a file or the command line, at most max_bytes of it for one ImGui call, cut at a
// character boundary and marked "... (N more bytes)". ImGui 1.86 reserves 4 vertices per byte of
// one text call and emits every glyph of wrapped text, including the lines below the window: a
// call of more than 16383 bytes overflows a draw list's 16-bit indices and ImGui aborts
// ("Too many vertices in ImDrawList"). Every text that is not cplab-viz's own goes through this.
inline constexpr size_t kMaxShownTextBytes = 4000;  // 16,000 vertices: well under 65,536
std::string shown(const std::string& text, size_t max_bytes = kMaxShownTextBytes);

}  // namespace cplab::viz
