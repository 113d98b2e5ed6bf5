// render.h: a Scene (viz/scene/scene.h) into Dear ImGui draw calls.
// What it is not: the scene's content; this only maps primitives to ImDrawList calls.
#pragma once

#include <imgui.h>

#include "scene.h"

namespace cplab::viz {

// draws the scene with its top-left corner at origin (screen pixels)
void draw_scene(const Scene& s, ImDrawList* dl, ImVec2 origin);

}  // namespace cplab::viz
