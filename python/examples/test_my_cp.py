"""test_my_cp.py: a pytest file to copy into your project: it checks your CP attention against
cplab's reference, forward and backward, for the configurations you list.

Replace my_cp_attention with a call into your implementation (PyTorch here; NumPy works the same):
it takes the global Q, K, V, dO and returns each rank's outputs in its local order, as a list of
dicts {"o", "lse", "dq", "dk", "dv"} (or one dict in global order). On a failure, pytest prints
cplab check's report: the verdict, the fault it found and where the error lives.
Run: pytest python/examples/test_my_cp.py
"""
import numpy as np
import pytest

import cplab
from cplab.testing import assert_cp_equivalent

CONFIGS = [
    dict(mode="p2p", layout="zigzag", causal=True, cp=4),
    dict(mode="p2p", layout="zigzag", causal=True, cp=2, window=24),
    dict(mode="allgather", layout="zigzag", causal=True, cp=4),
    dict(mode="a2a", layout="contiguous", causal=False, cp=2),
]


def my_cp_attention(q, k, v, do, **spec):
    """Stand-in for your implementation: here, cplab's own reference split into per-rank shards."""
    r = cplab.run(q, k, v, do, backward=True, **spec)
    return [r.shard(rank) for rank in range(spec["cp"])]


@pytest.mark.parametrize("spec", CONFIGS, ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cp_attention_matches_reference(spec, dtype):
    rng = np.random.default_rng(0)
    seq, heads, kv_heads, head_dim = 128, 8, 2, 32
    q = rng.uniform(-1, 1, (seq, heads, head_dim)).astype(dtype)
    k = rng.uniform(-1, 1, (seq, kv_heads, head_dim)).astype(dtype)
    v = rng.uniform(-1, 1, (seq, kv_heads, head_dim)).astype(dtype)
    do = rng.uniform(-1, 1, (seq, heads, head_dim)).astype(dtype)
    outputs = my_cp_attention(q, k, v, do, **spec)
    assert_cp_equivalent({"q": q, "k": k, "v": v, "do": do}, outputs, **spec)
