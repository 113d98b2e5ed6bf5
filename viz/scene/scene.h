// scene.h: what a cplab-viz view draws, as plain data: rectangles, polygons, lines, arrows, text.
//
// What it is: Scene, a list of primitives in pixel coordinates of a canvas (origin top left), each
// with a semantic tag ("tile", "token", "arrow", "sample", ...) and the rank / peer / sample it
// stands for, so tests can ask "which tiles does the ring view show at step 3?" without a display;
// rank colours; pixel binning of token spans (how 1M tokens become 1,200 pixels); number formats.
// Views (views.h) build Scenes from the reference's own layouts, traces and schedules; the app
// (viz/app) turns a Scene into Dear ImGui draw calls. Nothing here knows about ImGui or OpenGL.
// What it is not: an algorithm. Nothing in viz/ decides who owns a token or what a rank computes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layout/layout.h"

namespace cplab::viz {

struct Rgba {
  std::uint8_t r = 0, g = 0, b = 0, a = 255;
  bool operator==(const Rgba&) const = default;
};
inline constexpr Rgba kBlack{0, 0, 0, 255}, kWhite{255, 255, 255, 255}, kGrey{128, 128, 128, 255},
    kLight{200, 200, 200, 255}, kDim{70, 70, 78, 255}, kText{230, 230, 235, 255}, kBackground{24, 24, 28, 255},
    kNone{0, 0, 0, 0};
// the empty matrix under the tiles, and the empty cell of the masks view's tile grid: what the
// legends call blank (computed by no rank)
inline constexpr Rgba kMatrix{34, 34, 40, 255}, kEmptyCell{40, 40, 46, 255};

// The extent of text in the app's font (Dear ImGui's default, ProggyClean 13 px: every character
// 7 px wide, a line 13 px high), so that views place text without a font and tests can check that
// no two texts (or a text and an arrow) overlap. A text primitive's box: its top left + this extent.
inline constexpr float kCharW = 7.0f, kLineH = 13.0f;
float text_width(const std::string& s);  // one line, in pixels
struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool hits(const Box& b) const;                               // the interiors intersect
  bool hits_segment(float ax, float ay, float bx, float by) const;  // the segment crosses the interior
};
Box text_box(float x, float y, const std::string& s);

// colour of rank r of P: Tableau-10 for P <= 10, else hues spread over the wheel in rank order
Rgba rank_color(int r, int P);
Rgba with_alpha(Rgba c, std::uint8_t a);
Rgba mix(Rgba a, Rgba b, double t);  // (1 - t) a + t b

struct Prim {
  enum class Kind { rect, poly, line, arrow, text, circle };
  Kind kind = Kind::rect;
  std::vector<float> pts;  // rect: x0 y0 x1 y1; poly: x y pairs (convex); line/arrow: x0 y0 x1 y1;
                           // text: x y (top left); circle: cx cy radius
  Rgba fill = kNone, stroke = kNone;
  float thickness = 1.0f;
  std::string text;        // text prims; also a short label of other prims
  // semantics (for tests and hover): what the primitive stands for
  std::string tag;         // "tile", "block", "token", "arrow", "node", "bar", "sample", "item", ...
  int rank = -1, peer = -1, id = -1;
  std::string info;        // extra facts: tile section and mask, a sample's length, ...
  int tile = -1;           // the Scene::tiles record this primitive draws a part of (-1: none)
};

// What a view drew, as data (--scene-json, tests): the facts a picture claims, beside its pixels.
// A panel: a named box of the canvas that its tiles' primitives must stay inside.
struct PanelRec {
  std::string name;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};
// A tile of the trace drawn in a panel: its event's facts (global query and key positions, mask,
// visible pairs as the reference counted them) and the size of one (query, key) cell in pixels,
// so that the area its primitives cover, in cells, is the number of pairs the picture shows.
struct TileRec {
  int panel = -1;  // index into Scene::panels
  int rank = -1, peer = -1;
  std::string phase;  // "fwd" | "bwd"
  int step = 0;
  std::vector<Span> rows, cols;
  std::string section, mask;
  std::int64_t pairs = 0;     // the trace's count
  double cell_w = 0, cell_h = 0;  // pixels per key and per query in this panel
};
// A message drawn (an arrow, a timeline bar): sender, receiver, bytes, and its time if the view
// places it in time (t1 >= t0 >= 0; -1: not timed).
struct MessageRec {
  int sender = -1, receiver = -1;
  std::string phase, op, tensor;
  int step = 0;
  std::int64_t bytes = 0;
  double t0_us = -1, t1_us = -1;
};
// A DCP sample drawn (scheduler): which schedule, round, sample and length, on which ranks, when
// (in the cost model's units).
struct SampleRec {
  std::string schedule;
  int round = 0, sample = 0;
  std::int64_t length = 0, first_rank = 0, ranks = 0;
  double t0 = 0, t1 = 0;
};
// Tokens drawn as a rank's (ownership): the global positions shown in that rank's colour.
struct TokenRec {
  int rank = -1;
  std::string layout;
  std::vector<Span> spans;
};

struct Scene {
  float width = 0, height = 0;
  std::string title;                  // one line shown above the view
  std::vector<std::string> notes;     // lines shown under the view (figures, legend)
  std::string hover;                  // what is under the mouse (empty: nothing)
  std::vector<Prim> prims;
  // what was drawn, as data (see PanelRec, TileRec, MessageRec, TokenRec)
  std::vector<PanelRec> panels;
  std::vector<TileRec> tiles;
  std::vector<MessageRec> messages;
  std::vector<TokenRec> tokens;
  std::vector<SampleRec> samples;

  void rect(float x0, float y0, float x1, float y1, Rgba fill, Rgba stroke = kNone, std::string tag = {}, int rank = -1);
  void poly(std::vector<float> xy, Rgba fill, std::string tag = {}, int rank = -1);
  void line(float x0, float y0, float x1, float y1, Rgba c, float thickness = 1.0f);
  void arrow(float x0, float y0, float x1, float y1, Rgba c, float thickness, int from, int to, std::string label = {});
  void text(float x, float y, std::string s, Rgba c = kText, std::string tag = "text");
  void circle(float cx, float cy, float radius, Rgba fill, Rgba stroke, int rank);
  // primitives with this tag (tests)
  std::vector<const Prim*> find(const std::string& tag) const;
  // a new primitive (the builders above fill in its colours)
  Prim& add(Prim::Kind kind, std::vector<float> pts, std::string tag, int rank);
  // records: a panel (returns its index); a tile, whose primitives are those added from `first_prim` on
  int panel(std::string name, float x0, float y0, float x1, float y1);
  void tile_drawn(TileRec rec, size_t first_prim);
  // the (query, key) cells the primitives of tile t cover: filled rects' and polygons' area / cell area
  double drawn_cells(int t) const;
};

// A token axis drawn over `pixels` pixels: token g lies in pixel floor(g * pixels / seq).
// add(span, w) adds w for each token of the span to its pixel, in O(pixels the span covers) for any
// stride, so a 1M-token layout bins in microseconds.
struct PixelBins {
  index_t seq = 1;
  int pixels = 1;
  std::vector<double> w;  // per pixel
  PixelBins(index_t seq_, int pixels_) : seq(seq_), pixels(pixels_), w(static_cast<size_t>(pixels_), 0.0) {}
  int pixel_of(index_t g) const { return static_cast<int>(g * pixels / seq); }
  index_t first_token(int px) const { return (static_cast<index_t>(px) * seq + pixels - 1) / pixels; }
  void add(const Span& s, double weight = 1.0);
};

std::string human_count(double x);             // 1.5K, 2.3M, 4.1G, 1.2T
std::string human_bytes(double bytes);         // 512 B, 1.5 KiB, 3.0 MiB
std::string fixed(double x, int digits);       // printf %.*f
// [576, 1600, 2624]: counts below 10 million exactly, as the lessons print them; larger ones as
// human_count (bytes: human_bytes), [137G, 137G]
std::string count_list(const std::vector<double>& v, bool bytes = false);
std::string human_time_us(double us);          // 850 ns, 12.5 us, 3.2 ms, 4.93 s
std::string human_time_axis(double us, double span_us);  // us in the unit human_time_us gives span_us: 0 s, 2.5 s

}  // namespace cplab::viz
