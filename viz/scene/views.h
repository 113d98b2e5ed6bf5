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

#include "core/mask.h"
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

// draw a tile in its own coordinates: nq query rows x nk keys into the pixel box [x0, x1) x [y0, y1),
// under the trace's mask string ("none", "causal", "causal(k)": key b visible to row a iff
// b <= a + k; "ranges": the visible run of every row from `ranges`, the reference's token_mask of
// the tile (thd.h), or drawn whole with a white outline when it is not given; "skipped": an outline)
void draw_tile_mask(Scene& s, float x0, float y0, float x1, float y1, index_t nq, index_t nk, const std::string& mask,
                    Rgba fill, const std::string& tag, int rank, const std::string& info, const Mask* ranges = nullptr);

}  // namespace cplab::viz
