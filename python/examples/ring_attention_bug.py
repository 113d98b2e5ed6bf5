"""ring_attention_bug.py: check a small hand-written NumPy ring attention with cplab.check, and let
it name the bug (the Python form of lesson 15, tutorials/15_checking).

Run: python python/examples/ring_attention_bug.py

ring_attention() below is a plain ring (p2p) forward pass over `cp` simulated ranks, contiguous
layout, causal, GQA: at step s rank r attends to the K, V block that started on rank (r - s) mod cp,
skips the blocks a causal mask hides, and merges each step's partial output with the running one by
their log-sum-exps (the online softmax). bug="sum" merges by adding the partial outputs instead
(a common first attempt); bug="diagonal" forgets the causal mask on the diagonal block.
What it is not: cplab's reference (that is C++, reached through cplab.run and cplab.check).
"""
import numpy as np

import cplab


def attention_block(q, k, v, scale, mask):
    """q (n, h, d), k and v (m, h, d), mask (n, m) True = visible: o (n, h, d), lse (h, n)."""
    s = np.einsum("nhd,mhd->hnm", q, k) * scale
    s = np.where(mask[None], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    o = np.einsum("hnm,mhd->nhd", p / np.where(l > 0, l, 1), v)
    lse = np.where(l[..., 0] > 0, np.log(np.where(l[..., 0] > 0, l[..., 0], 1)) + m[..., 0], -np.inf)
    return o, lse


def ring_attention(q, k, v, cp, bug=None):
    """q (S, h, d), k and v (S, hk, d), global order: o (S, h, d), lse (h, S), global order."""
    S, h, d = q.shape
    group = h // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)  # GQA: each KV head serves `group` query heads
    n = S // cp
    scale = 1 / np.sqrt(d)
    o = np.zeros_like(q)
    lse = np.full((h, S), -np.inf)
    for r in range(cp):  # each rank (simulated one after another)
        rows = slice(r * n, (r + 1) * n)
        o_r, lse_r = np.zeros((n, h, d)), np.full((h, n), -np.inf)
        for step in range(cp):
            src = (r - step) % cp  # the K, V block this rank holds at this step
            if src > r:
                continue  # causal: keys after every query of this rank
            cols = slice(src * n, (src + 1) * n)
            mask = np.ones((n, n), bool) if (src < r or bug == "diagonal") else np.tri(n, dtype=bool)
            o_b, lse_b = attention_block(q[rows], k[cols], v[cols], scale, mask)
            if bug == "sum":
                o_r = o_r + o_b
                lse_r = np.logaddexp(lse_r, lse_b)
                continue
            new = np.logaddexp(lse_r, lse_b)
            o_r = o_r * np.exp(lse_r - new).T[:, :, None] + o_b * np.exp(lse_b - new).T[:, :, None]
            lse_r = new
        o[rows], lse[:, rows] = o_r, lse_r
    return o, lse


def main():
    rng = np.random.default_rng(0)
    S, h, hk, d, cp = 64, 4, 2, 16, 4
    q, k, v = rng.uniform(-1, 1, (S, h, d)), rng.uniform(-1, 1, (S, hk, d)), rng.uniform(-1, 1, (S, hk, d))
    spec = dict(mode="p2p", layout="contiguous", causal=True, cp=cp)
    for bug in (None, "sum", "diagonal"):
        o, lse = ring_attention(q, k, v, cp, bug)
        report = cplab.check({"q": q, "k": k, "v": v}, {"o": o, "lse": lse}, **spec)
        print(f"--- ring_attention(bug={bug!r}): {report.verdict}")
        if bug is not None:
            print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
