// layer_stack.cpp: the dense and the CP attention stack (see layer_stack.h).
#include "modes/layer_stack.h"

#include <random>

#include "core/dense_attention.h"
#include "core/util.h"

namespace cplab {

namespace {

// (n, h*d) matrix <-> (n, h, d) tensor: the same row-major memory
Tensor3<double> heads_of(const Mat<double>& m, index_t h, index_t d) {
  Tensor3<double> t(m.rows(), h, d);
  std::copy(m.data(), m.data() + m.size(), t.data.begin());
  return t;
}
Mat<double> mat_of(const Tensor3<double>& t) {
  Mat<double> m(t.n, t.h * t.d);
  std::copy(t.data.begin(), t.data.end(), m.data());
  return m;
}

// one rank's (or the whole sequence's) token-local part of a layer
struct Local {
  Tensor3<double> q, k, v;  // after projection (q, k also after RoPE)
};
Local project(const StackSpec& s, const LayerWeights& w, const Mat<double>& x, const std::vector<index_t>& pos) {
  Local l{heads_of(x * w.wq, s.heads, s.head_dim), heads_of(x * w.wk, s.kv_heads, s.head_dim),
          heads_of(x * w.wv, s.kv_heads, s.head_dim)};
  apply_rope(l.q, pos, s.rope);
  apply_rope(l.k, pos, s.rope);
  return l;
}

// backward of the projections: from dQ, dK (after RoPE) and dV, add to dx and the weight grads
void project_back(const StackSpec& s, const LayerWeights& w, const Mat<double>& x, const std::vector<index_t>& pos,
                  Tensor3<double> dq, Tensor3<double> dk, const Tensor3<double>& dv, Mat<double>& dx, LayerWeights& dw) {
  apply_rope(dq, pos, s.rope, true);  // RoPE is a rotation: its backward is the inverse rotation
  apply_rope(dk, pos, s.rope, true);
  const Mat<double> mq = mat_of(dq), mk = mat_of(dk), mv = mat_of(dv);
  dw.wq += x.transpose() * mq;
  dw.wk += x.transpose() * mk;
  dw.wv += x.transpose() * mv;
  dx += mq * w.wq.transpose() + mk * w.wk.transpose() + mv * w.wv.transpose();
}

LayerWeights zeros_like(const LayerWeights& w) {
  return {Mat<double>::Zero(w.wq.rows(), w.wq.cols()), Mat<double>::Zero(w.wk.rows(), w.wk.cols()),
          Mat<double>::Zero(w.wv.rows(), w.wv.cols()), Mat<double>::Zero(w.wo.rows(), w.wo.cols())};
}

}  // namespace

std::vector<LayerWeights> random_weights(const StackSpec& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0 / std::sqrt(static_cast<double>(s.hidden)));
  auto rnd = [&](index_t r, index_t c) {
    Mat<double> m(r, c);
    for (index_t i = 0; i < m.size(); ++i) m.data()[i] = nd(rng);
    return m;
  };
  std::vector<LayerWeights> w;
  for (size_t l = 0; l < s.modes.size(); ++l)
    w.push_back({rnd(s.hidden, s.heads * s.head_dim), rnd(s.hidden, s.kv_heads * s.head_dim),
                 rnd(s.hidden, s.kv_heads * s.head_dim), rnd(s.heads * s.head_dim, s.hidden)});
  return w;
}

StackResult dense_stack(const StackSpec& s, const std::vector<LayerWeights>& w, const Mat<double>& x0,
                        const Mat<double>& dy) {
  const index_t S = x0.rows(), L = static_cast<index_t>(s.modes.size());
  const std::vector<index_t> pos = iota_positions(0, S);
  const Mask mask = s.causal ? Mask::causal() : Mask::none();
  const double scale = default_scale(s.head_dim);
  std::vector<Mat<double>> xs = {x0};
  std::vector<Local> locals;
  std::vector<AttnOut<double>> outs;
  for (index_t l = 0; l < L; ++l) {
    locals.push_back(project(s, w[sz(l)], xs.back(), pos));
    outs.push_back(dense_forward(locals.back().q, locals.back().k, locals.back().v, mask, scale));
    xs.push_back(xs.back() + mat_of(outs.back().o) * w[sz(l)].wo);
  }
  StackResult r{xs.back(), dy, {}, {}};
  r.dw.resize(sz(L));
  for (index_t l = L - 1; l >= 0; --l) {
    const LayerWeights& wl = w[sz(l)];
    LayerWeights& dw = r.dw[sz(l)] = zeros_like(wl);
    const Mat<double> g = r.dx;  // dL/d(output of layer l)
    dw.wo = mat_of(outs[sz(l)].o).transpose() * g;
    const Tensor3<double> dO = heads_of(g * wl.wo.transpose(), s.heads, s.head_dim);
    const AttnGrads<double> ag = dense_backward(locals[sz(l)].q, locals[sz(l)].k, locals[sz(l)].v, outs[sz(l)], dO, mask, scale);
    project_back(s, wl, xs[sz(l)], pos, ag.dq, ag.dk, ag.dv, r.dx, dw);  // r.dx already holds the residual path
  }
  return r;
}

StackResult cp_stack(const StackSpec& s, const Partition& part, const std::vector<LayerWeights>& w,
                     const Mat<double>& x0, const Mat<double>& dy, SimComm& comm) {
  const index_t P = part.cp(), L = static_cast<index_t>(s.modes.size());
  const Packing pk = Packing::single(part.seq());
  // each layer's CpSpec: its mode on the stack's partition, heads and mask (validated here)
  std::vector<CpSpec> specs;
  for (const LayerMode& m : s.modes) {
    CpFields f;
    f.mode = m.mode, f.icp = m.icp, f.ocp = m.ocp;
    f.layout = part.layout(), f.cp = P, f.seq = part.seq();
    f.heads = s.heads, f.kv_heads = s.kv_heads, f.head_dim = s.head_dim, f.causal = s.causal;
    specs.emplace_back(f);
  }
  // rank r's rows of a sequence-order (S, hidden) matrix, via the layout's shard()
  auto rows_of = [&](const Mat<double>& m, index_t r) { return mat_of(shard(part, heads_of(m, 1, m.cols()))[sz(r)]); };
  std::vector<std::vector<index_t>> pos;
  std::vector<std::vector<Mat<double>>> xs(sz(P));  // per rank, per layer input
  for (index_t r = 0; r < P; ++r) pos.push_back(rope_positions(part, pk, r)), xs[sz(r)].push_back(rows_of(x0, r));
  std::vector<CpState<double>> states(sz(L));
  std::vector<CpOutput<double>> outs;
  for (index_t l = 0; l < L; ++l) {
    PerRank<double> q, k, v;
    for (index_t r = 0; r < P; ++r) {
      Local lc = project(s, w[sz(l)], xs[sz(r)].back(), pos[sz(r)]);
      q.push_back(std::move(lc.q)), k.push_back(std::move(lc.k)), v.push_back(std::move(lc.v));
    }
    outs.push_back(cp_attention_forward(specs[sz(l)], q, k, v, comm, states[sz(l)]));
    for (index_t r = 0; r < P; ++r) xs[sz(r)].push_back(xs[sz(r)].back() + mat_of(outs.back().o[sz(r)]) * w[sz(l)].wo);
  }
  std::vector<Mat<double>> dx;
  for (index_t r = 0; r < P; ++r) dx.push_back(rows_of(dy, r));
  std::vector<std::vector<LayerWeights>> dw(sz(P));  // per rank partial weight gradients
  for (index_t l = L - 1; l >= 0; --l) {
    const LayerWeights& wl = w[sz(l)];
    PerRank<double> dO;
    for (index_t r = 0; r < P; ++r) dO.push_back(heads_of(dx[sz(r)] * wl.wo.transpose(), s.heads, s.head_dim));
    const CpGrads<double> g = cp_attention_backward(specs[sz(l)], states[sz(l)], dO, comm);
    for (index_t r = 0; r < P; ++r) {
      LayerWeights d = zeros_like(wl);
      d.wo = mat_of(outs[sz(l)].o[sz(r)]).transpose() * dx[sz(r)];
      project_back(s, wl, xs[sz(r)][sz(l)], pos[sz(r)], g.dq[sz(r)], g.dk[sz(r)], g.dv[sz(r)], dx[sz(r)], d);
      dw[sz(r)].insert(dw[sz(r)].begin(), std::move(d));
    }
  }
  // every rank holds a partial sum of each weight gradient: all-reduce over the CP group
  // (reduce-scatter then all-gather of the flattened gradients, padded to a multiple of P)
  std::vector<std::vector<double>> flat(sz(P));
  for (index_t r = 0; r < P; ++r)
    for (const LayerWeights& d : dw[sz(r)])
      for (const Mat<double>* m : {&d.wq, &d.wk, &d.wv, &d.wo}) flat[sz(r)].insert(flat[sz(r)].end(), m->data(), m->data() + m->size());
  const size_t total = flat[0].size(), padded = (total + sz(P) - 1) / sz(P) * sz(P);
  for (auto& f : flat) f.resize(padded, 0.0);
  const auto mine = comm.reduce_scatter<double>("dw", flat);
  const std::vector<double> summed = comm.all_gather<double>("dw", mine)[0];
  StackResult res;
  res.dw_rank = dw;
  PerRank<double> ys, dxs;
  for (index_t r = 0; r < P; ++r) ys.push_back(heads_of(xs[sz(r)].back(), 1, s.hidden)), dxs.push_back(heads_of(dx[sz(r)], 1, s.hidden));
  res.y = mat_of(unshard(part, ys));
  res.dx = mat_of(unshard(part, dxs));
  size_t off = 0;
  for (const LayerWeights& d0 : dw[0]) {
    LayerWeights d = zeros_like(d0);
    for (Mat<double>* m : {&d.wq, &d.wk, &d.wv, &d.wo}) {
      std::copy(summed.begin() + static_cast<std::ptrdiff_t>(off), summed.begin() + static_cast<std::ptrdiff_t>(off + static_cast<size_t>(m->size())), m->data());
      off += static_cast<size_t>(m->size());
    }
    res.dw.push_back(std::move(d));
  }
  return res;
}

}  // namespace cplab
