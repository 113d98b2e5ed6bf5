// panel_masks.cpp: the controls of the masks view (see app.h).
#include <imgui.h>

#include "app.h"

namespace cplab::viz {

void panel_masks(AppState& app) {
  ImGui::TextWrapped("The causal mask in global order, in rank order (what each rank's tiles cover), and every "
                     "rank's tiles by shape: diagonal (triangle), full, half the queries, half the keys, skipped.");
  run_controls(app);
}

}  // namespace cplab::viz
