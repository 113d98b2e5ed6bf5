// views_infer.h: cplab-viz's views of an inference step (issue 37): T new tokens over a persistent
// KV cache of P tokens, sharded over N ranks (reference/infer/infer_spec.h).
//
// What it is: the four views a RunModel holding an InferModel is drawn with (ownership_view,
// ring_view, masks_view and timeline_view hand it over), each a function from the model to a Scene:
//   ownership  every rank's cached and new tokens in KV space (the spec's cache_rows and q_kv_rows)
//   ring       the T x (P+T) matrix with the tiles every rank computes at one step of the planned
//              trace, what each rank holds (a visiting Q block or KV block: the tiles' rows' and
//              columns' owners), and the step's messages: Q blocks (pass-Q), KV blocks (pass-KV), the
//              gathered Q (decode-ag) or the closing all-to-all of the partial outputs
//   masks      the T x (P+T) causal-with-offset rectangle (token_mask over the spec's kv_packing), and
//              every forward tile of the trace, by rank
//   timeline   the two variants the step chooses between (pass-KV and pass-Q; decode: decode-pass-q
//              and decode-ag) stacked, step by step: each rank's bytes sent and FLOPs per step
// Every cell drawn is token_mask's (layout/thd.h) for the tile's rows and columns; every message is a
// send of the trace; the scene records them (scene.h TileRec, MessageRec, TokenRec) for the tests.
// What it is not: the training views (views.h), a time model (cplab plan prices the traces), or an
// algorithm: who holds what and which tiles are computed come from the spec and the trace.
#pragma once

#include <string>
#include <vector>

#include "infer_model.h"
#include "scene.h"
#include "views.h"

namespace cplab::viz {

Scene infer_ownership_view(const InferModel& m, const ViewState& v, float W, float H);
Scene infer_ring_view(const InferModel& m, const ViewState& v, float W, float H);
Scene infer_masks_view(const InferModel& m, const ViewState& v, float W, float H);
Scene infer_timeline_view(const InferModel& m, const ViewState& v, float W, float H);

// The T x (P+T) matrix drawn at (x, y): query row i (query space) at y + i ch, KV row k at x + k cw
struct InferFrame {
  float x = 0, y = 0;
  double cw = 1, ch = 1;
  index_t T = 1, KV = 1;
  float x1() const { return x + static_cast<float>(cw * static_cast<double>(KV)); }
  float y1() const { return y + static_cast<float>(ch * static_cast<double>(T)); }
};
// the frame filling at most w x h at (x, y): cw = w / (P+T), rows at most h / T and at most 28 px
InferFrame infer_frame(const InferSpec& s, float x, float y, float w, float h);
// the requests' cache and new-token columns (cache darker), the request boundaries, the labels
void draw_infer_frame(Scene& s, const InferModel& m, const InferFrame& f);
// the visible (query, key) cells of rows (KV rows of new tokens, ascending) x cols (KV rows,
// ascending) under token_mask over the spec's kv_packing and its PositionRule (the variants' own mask):
// exact, cell by cell, when rows x cols <= kExactCells; otherwise one query per pixel row and key runs
// closer than a pixel merged (exact to the pixel, not to the cell)
void draw_infer_cells(Scene& s, const InferModel& m, const InferFrame& f, const std::vector<index_t>& rows,
                      const std::vector<index_t>& cols, Rgba fill, const std::string& tag, int rank, const std::string& info);
// a tile event of the trace drawn in `panel`: its cells and its record (scene.h TileRec)
void draw_infer_tile(Scene& s, const InferModel& m, const InferFrame& f, const Event& e, int panel, Rgba fill);
// the variant's name as the views write it: the mode table's title ("p2p (pass-KV)", "pass-q", ...)
std::string infer_variant_label(InferMode mode);
// per rank: the sum over the trace's forward events of this kind of bytes (sends) or FLOPs (tiles)
std::vector<double> infer_per_rank(const Trace& t, EventKind kind, int N);

}  // namespace cplab::viz
