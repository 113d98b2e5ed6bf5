// views.h: the five views of cplab-viz, each a function from a model to a Scene.
//
// What it is: ownership (who owns which tokens, per layout, packed sequences, hierarchical groups),
// ring (the S x S attention matrix with the tiles every rank computes at one step of the trace,
// the messages of that step, per-rank work), masks (the global causal mask, the same mask in rank
// order, and every rank's tiles by kind), scheduler (a DCP batch, Megatron v1 and cplab side by
// side, ranks x time) and timeline (per-rank compute and communication lanes of a trace). Every
// fact drawn comes from the model (model.h): Partition, Packing, trace events, DcpSchedule.
// What it is not: an algorithm, or ImGui code (viz/app draws the Scene).
#pragma once

#include <array>
#include <optional>

#include "core/mask.h"
#include "check_model.h"
#include "model.h"
#include "scene.h"

namespace cplab::viz {

struct ViewState {
  int step = 0;             // ring: index into RunModel::steps (clamped)
  float mx = -1, my = -1;   // mouse in canvas pixels; < 0: no hover
  index_t zoom0 = 0;        // ownership: first token of the token-level zoom strip
  double t0 = 0, t1 = 0;    // timeline: visible window in microseconds (t1 <= t0: everything)
};

Scene ownership_view(const RunModel& m, const ViewState& v, float W, float H);
Scene ring_view(const RunModel& m, const ViewState& v, float W, float H);
Scene masks_view(const RunModel& m, const ViewState& v, float W, float H);
Scene scheduler_view(const SchedModel& m, const ViewState& v, float W, float H);
Scene timeline_view(const RunModel& m, const ViewState& v, float W, float H);
// a `cplab check --json` report: the error heat map per output x rank's chunk x head (check_model.h)
Scene check_view(const CheckModel& m, const ViewState& v, float W, float H);

// the names accepted by --view, in menu order
const std::vector<std::string>& view_names();

// A square matrix of `seq` tokens drawn at (x, y) with side `side` pixels: token <-> pixel maps
// and the drawing of a block of query rows x key columns under the run's mask (causal and/or
// packed sequences), shared by the ring and masks views.
struct MatrixFrame {
  float x = 0, y = 0, side = 1;
  index_t seq = 1;
  float px(index_t token) const { return static_cast<float>(static_cast<double>(token) * side / static_cast<double>(seq)); }
  index_t token_at(float p) const;  // -1 outside
};
// draw the visible part of rows x cols (global positions) for a causal and/or packed run
void draw_block(Scene& s, const MatrixFrame& f, const Span& rows, const Span& cols, bool causal,
                const Packing* packing, Rgba fill, const std::string& tag, int rank, const std::string& info);

// How a panel orders the tokens along one axis: global order (token g at g), or unit order (unit u's
// local tokens at u * len, in local order) where a unit is a rank of `units`: the run's partition
// (p2p, all-gather), or the outer ring's partition of a2a+p2p (hierarchical_cp.h)
struct AxisOrder {
  std::optional<Partition> units;  // empty: global order
  index_t index(index_t g) const;
  index_t unit_len() const { return units ? units->local_len() : 0; }
};
// the row order of the masks view's rank-order panel (a2a: global, as every rank holds all tokens
// of its heads) and its column order (the KV block's tokens: unit order where KV travels in blocks,
// p2p and a2a+p2p; global where it is gathered or swapped)
AxisOrder row_order(const CpSpec& spec);
AxisOrder col_order(const CpSpec& spec);
// heads are split over spec.a2a_group() head groups (a2a: P, rank r holds group r; a2a+p2p: I,
// rank p * I + a holds group a: hierarchical_cp.h hcp_rank); 1 group and group 0 otherwise
int head_groups(const CpSpec& spec);
int head_group_of(const CpSpec& spec, int rank);
// a grid of n equal square boxes filling w x h at (x, y), row-major, `gap` pixels apart: {x0, y0, side} each
std::vector<std::array<float, 3>> grid_boxes(int n, float x, float y, float w, float h, float gap);

// A tile's visible (query, key) cells drawn from the reference's mask rule for global positions
// (thd.h token_mask: same sequence, real keys, causal if the run is), each query row at
// y0 + ro.index(query) * ch and each key at x0 + co.index(key) * cw, runs of adjacent cells merged.
// Exact, cell by cell, when the tile has at most kExactCells (query, key) cells; returns false
// (drawing nothing) otherwise, and the caller draws an approximation.
inline constexpr index_t kExactCells = 1 << 16;
bool draw_tile_cells(Scene& s, float x0, float y0, double cw, double ch, const AxisOrder& ro, const AxisOrder& co,
                     const Event& e, const CpSpec& spec, Rgba fill, const std::string& tag, const std::string& info);
// A tile too large for draw_tile_cells under a position rule that is not plain causal or full
// (window, chunk: mask_rule.h PositionRule), one pixel row at a time: the row's first query, its
// visible key positions from the rule, cut to each of the tile's key spans and placed by the
// panel's orders (a span whose keys are not side by side in that order, striped keys in global
// order: their bounding run, fainter by the density). Exact to the pixel row, not to the cell.
// False (nothing drawn) when the tile's rows are not one run of the row order.
bool draw_tile_rule(Scene& s, float x0, float y0, double cw, double ch, const AxisOrder& ro, const AxisOrder& co, const Event& e,
                    const CpSpec& spec, Rgba fill, const std::string& tag, const std::string& info);
// One framed square per head group (head_groups(spec); one when heads are not split) in a grid
// filling w x h at (x, y), each registered as a panel named `name` (+ ", head group g"), labelled
// with its heads, its boundaries drawn (draw_boundaries with o, spans, pk): the ring and masks
// views' matrix squares
struct GroupSquare {
  float x = 0, y = 0, side = 1;
  int panel = -1;
};
std::vector<GroupSquare> head_group_squares(Scene& s, const CpSpec& spec, float x, float y, float w, float h, const std::string& name,
                                            const AxisOrder& o, const std::vector<std::vector<Span>>* spans, const Packing* pk);
// the record of tile e drawn in `panel` with cells of cw x ch pixels (its primitives from first_prim on)
void record_tile(Scene& s, const Event& e, int panel, double cw, double ch, size_t first_prim);

// the run's own layout's spans per rank from RunModel::layouts (null when it has none)
const std::vector<std::vector<Span>>* run_spans(const RunModel& m);
// Reading aids drawn over a square panel of `side` pixels at (x, y) whose axes order tokens by o:
// boundaries: where one unit's tokens end (unit order), or where the owner of the next token
// changes (global order: the layout's chunks; striped strides are too fine and not drawn), dim;
// the packed sequences' boundaries (global order, pk given), bright. Ticks: token numbers along
// the top (keys) and the left (queries), global positions or unit-order indices.
// `spans`: every rank's tokens (RunModel::layouts, computed once per model), or null: no chunks
void draw_boundaries(Scene& s, float x, float y, float side, index_t S, const AxisOrder& o,
                     const std::vector<std::vector<Span>>* spans, const Packing* pk);
void draw_token_ticks(Scene& s, float x, float y, float side, index_t S, const AxisOrder& o);
// the rank colours: a swatch and "r" number per rank (P <= 16), else a strip from rank 0 to P-1
void draw_rank_legend(Scene& s, float x, float y, float w, int P);

// What a ring tile's trace section means, in words (view_labels.cpp): "lower" -> "KV of a lower rank
// (j<r)", "upper" -> "KV of a higher rank (j>r)", "diagonal" -> "own KV (j=r)"; brief: "j<r", "j>r",
// "j=r"; any other section (a head group, an inference step's) unchanged. Every view and legend
// prints sections through it; the trace keeps its strings (ring_schedule.h, read by `cplab check`).
std::string section_label(const std::string& section, bool brief = false);
// the legend line that defines j and r for the views that label tiles by section
std::string section_legend();
// "fwd step 1 (2 of 4 forward steps)": step si of m.steps (clamped) counted within its own phase
std::string step_label(const RunModel& m, int si);
// A row of legend keys at (x, y), wrapping at width w: a 10 px swatch (fill, stroke, a cross when
// `cross`) and its words, tagged "legend_key" (info = the words) and "legend_text"; returns the height used
struct LegendKey {
  Rgba fill = kNone, stroke = kNone;
  std::string label;
  bool cross = false;
};
float draw_key_legend(Scene& s, float x, float y, float w, const std::vector<LegendKey>& keys);

// draw a tile in its own coordinates: nq query rows x nk keys into the pixel box [x0, x1) x [y0, y1),
// under the trace's mask string ("none", "causal", "causal(k)": key b visible to row a iff
// b <= a + k; "ranges": drawn whole with a white outline, the caller having no cell-exact drawing
// for it (draw_tile_cells, draw_tile_rule); "skipped": an outline with a cross)
void draw_tile_mask(Scene& s, float x0, float y0, float x1, float y1, index_t nq, index_t nk, const std::string& mask,
                    Rgba fill, const std::string& tag, int rank, const std::string& info);

}  // namespace cplab::viz
