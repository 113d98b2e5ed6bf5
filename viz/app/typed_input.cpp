// typed_input.cpp: ImGui fields whose typed value is applied when the edit ends (see typed_input.h).
#include "typed_input.h"

#include <imgui.h>

#include <map>

namespace cplab::viz {

bool input_text_committed(const char* label, char* buf, size_t size) {
  ImGui::InputText(label, buf, size);  // ImGui 1.86 writes every keystroke into buf
  return ImGui::IsItemDeactivatedAfterEdit();
}

bool input_int_committed(const char* label, long long& x) {
  // the value being typed in each field (by ImGui id) until its edit ends: the field shows ImGui's
  // own text while active, and the frame it is left in no longer writes it back
  static std::map<ImGuiID, long long> typed;
  const ImGuiID id = ImGui::GetID(label);
  const auto it = typed.find(id);
  long long v = it != typed.end() ? it->second : x;
  if (ImGui::InputScalar(label, ImGuiDataType_S64, &v, nullptr, nullptr, "%lld")) typed[id] = v;
  if (!ImGui::IsItemDeactivatedAfterEdit()) {
    if (!ImGui::IsItemActive()) typed.erase(id);
    return false;
  }
  const auto done = typed.find(id);
  if (done == typed.end()) return false;
  const bool changed = done->second != x;
  x = done->second;
  typed.erase(done);
  return changed;
}

}  // namespace cplab::viz
