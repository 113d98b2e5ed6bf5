// panel_ownership.cpp: the controls of the ownership view (see app.h).
#include <imgui.h>

#include "app.h"

namespace cplab::viz {

void panel_ownership(AppState& app) {
  ImGui::TextWrapped("Who owns which tokens. Hover a token for its global position, rank, local index and RoPE position.");
  run_controls(app);
  ImGui::Separator();
  long long z = app.vs.zoom0;
  const long long zmax = app.run_ok && app.run.spec ? static_cast<long long>(app.run.cp().S()) - 1 : 0;
  const long long zmin = 0;
  if (ImGui::SliderScalar("zoom from", ImGuiDataType_S64, &z, &zmin, &zmax)) app.vs.zoom0 = static_cast<index_t>(z);
  help("First token of the token-by-token strip. Scroll it to read each token's rank and local index.");
}

}  // namespace cplab::viz
