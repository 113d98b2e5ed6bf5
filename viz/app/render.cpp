// render.cpp: Scene -> ImDrawList (see render.h).
#include "render.h"

#include <cmath>

namespace cplab::viz {

namespace {
ImU32 col(Rgba c) { return IM_COL32(c.r, c.g, c.b, c.a); }
}  // namespace

std::string shown(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 character
  return text.substr(0, n) + " ... (" + std::to_string(text.size() - n) + " more bytes not shown)";
}

void draw_scene(const Scene& s, ImDrawList* dl, ImVec2 o) {
  for (const Prim& p : s.prims) {
    const auto& q = p.pts;
    switch (p.kind) {
      case Prim::Kind::rect:
        if (p.fill.a > 0) dl->AddRectFilled({o.x + q[0], o.y + q[1]}, {o.x + q[2], o.y + q[3]}, col(p.fill));
        if (p.stroke.a > 0) dl->AddRect({o.x + q[0], o.y + q[1]}, {o.x + q[2], o.y + q[3]}, col(p.stroke), 0.0f, 0, p.thickness);
        break;
      case Prim::Kind::poly: {
        ImVec2 pts[16];
        const int n = static_cast<int>(std::min<size_t>(q.size() / 2, 16));
        for (int i = 0; i < n; ++i) pts[i] = {o.x + q[static_cast<size_t>(2 * i)], o.y + q[static_cast<size_t>(2 * i + 1)]};
        dl->AddConvexPolyFilled(pts, n, col(p.fill));
        break;
      }
      case Prim::Kind::line:
        dl->AddLine({o.x + q[0], o.y + q[1]}, {o.x + q[2], o.y + q[3]}, col(p.stroke), p.thickness);
        break;
      case Prim::Kind::arrow: {
        const ImVec2 a{o.x + q[0], o.y + q[1]}, b{o.x + q[2], o.y + q[3]};
        dl->AddLine(a, b, col(p.stroke), p.thickness);
        const float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
        if (len > 1) {
          const float ux = dx / len, uy = dy / len, hsz = 5.0f + 2.0f * p.thickness;
          dl->AddTriangleFilled(b, {b.x - ux * hsz - uy * hsz * 0.5f, b.y - uy * hsz + ux * hsz * 0.5f},
                                {b.x - ux * hsz + uy * hsz * 0.5f, b.y - uy * hsz - ux * hsz * 0.5f}, col(p.stroke));
        }
        break;
      }
      case Prim::Kind::text:
        if (p.text.size() <= kMaxShownTextBytes)
          dl->AddText({o.x + q[0], o.y + q[1]}, col(p.fill), p.text.c_str());
        else
          dl->AddText({o.x + q[0], o.y + q[1]}, col(p.fill), shown(p.text).c_str());
        break;
      case Prim::Kind::circle:
        if (p.fill.a > 0) dl->AddCircleFilled({o.x + q[0], o.y + q[1]}, q[2], col(p.fill));
        if (p.stroke.a > 0) dl->AddCircle({o.x + q[0], o.y + q[1]}, q[2], col(p.stroke));
        break;
    }
  }
}

}  // namespace cplab::viz
