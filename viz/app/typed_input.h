// typed_input.h: the typed fields of cplab-viz's controls (cp, seq, heads, kv cache, cu_seqlens, the
// scheduler's ranks and lengths, gpus/node): the value typed is applied when the edit ends, however
// it ends: Enter, Tab or a click elsewhere (ImGui 1.86 ImGui::IsItemDeactivatedAfterEdit), never
// keystroke by keystroke (a half-typed "1" of "128" would rebuild the run) and never lost by leaving
// the field without Enter.
// What it is not: validation (the rebuilt model checks the values) or the panels' layout (panel_*.cpp).
#pragma once

#include <cstddef>

namespace cplab::viz {

// a text field over buf[size]: true when an edit ended (buf holds what was typed)
bool input_text_committed(const char* label, char* buf, size_t size);
// an integer field: true when an edit ended with a new value, now in x
bool input_int_committed(const char* label, long long& x);

}  // namespace cplab::viz
