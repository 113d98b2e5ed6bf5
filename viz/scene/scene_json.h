// scene_json.h: what a view drew, as JSON (cplab-viz --scene-json FILE, tests).
//
// What it is: scene_json(scene), the Scene's records (scene.h): its title and notes, its panels,
// every trace tile drawn (rank, peer, phase, step, global query and key positions as spans
// [begin, count, stride], section, mask, the trace's visible pairs and the pairs the picture shows:
// the cells its primitives cover), every message drawn (sender, receiver, bytes, op, tensor, and
// modelled or measured start and end times where the view places it in time), every rank's
// tokens drawn (ownership), and every DCP sample drawn (scheduler: schedule, round, ranks, times). A checker needs nothing else to compare a picture with the reference.
// What it is not: the primitives (pixels), or a reader (nothing reads it back into a Scene).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "scene.h"

namespace cplab::viz {

nlohmann::json scene_json(const Scene& s, const std::string& view);

}  // namespace cplab::viz
