"""Zero-copy: a float64 C-contiguous input reaches the reference as the caller's own memory (the
address the C++ run's Inputs held is the array's), and outputs come back as views of the C++ run's
buffers (float32 for a float run: the buffer the run computed, not a converted copy)."""
import numpy as np

import cplab

CFG = dict(mode="p2p", layout="zigzag", causal=True, cp=2)


def _qkv(dtype=np.float64, seq=32):
    rng = np.random.default_rng(0)
    return (rng.uniform(-1, 1, (seq, 2, 8)).astype(dtype), rng.uniform(-1, 1, (seq, 1, 8)).astype(dtype),
            rng.uniform(-1, 1, (seq, 1, 8)).astype(dtype))


def _address(a):
    return a.__array_interface__["data"][0]


def test_float64_input_not_copied():
    q, k, v = _qkv()
    r = cplab.run(q, k, v, **CFG)
    seen = r._r.inputs_seen
    for name, a in (("q", q), ("k", k), ("v", v)):
        address, borrowed = seen[name]
        assert borrowed, name
        assert address == _address(a), name


def test_other_inputs_converted_once():
    q, k, v = _qkv(np.float32)
    r = cplab.run(q, k, v, **CFG)
    address, borrowed = r._r.inputs_seen["q"]
    assert not borrowed and address != _address(q)
    # a strided view (every other token of a longer array) is copied, and gives the same result
    q2, k2, v2 = _qkv(seq=64)
    a = cplab.run(q2[::2], k2[::2], v2[::2], **CFG)
    b = cplab.run(np.ascontiguousarray(q2[::2]), np.ascontiguousarray(k2[::2]), np.ascontiguousarray(v2[::2]), **CFG)
    address, _ = a._r.inputs_seen["q"]  # the binding's one C-ordered copy (then read in place)
    assert address not in (_address(q2), _address(q2[::2]))
    assert a.o.tobytes() == b.o.tobytes()


def test_outputs_are_views_of_the_run():
    q, k, v = _qkv()
    r = cplab.run(q, k, v, dtype="float", backward=True, **CFG)
    o = r.o
    assert o.dtype == np.float32 and not o.flags.owndata and not o.flags.writeable
    # the array is the float32 buffer the C++ run computed (RunSpec::keep_run_dtype), not a conversion
    assert _address(o) == r._r.output_addresses["o"]
    assert _address(r.lse) == r._r.output_addresses["lse"] and r.lse.dtype == np.float32
    assert _address(r.o) == _address(o)  # the same buffer each time: no copy per access
    # the base is the C++ result's owner, not a NumPy copy
    assert not isinstance(o.base, np.ndarray)
    del r
    assert np.isfinite(o).all()  # the array keeps the result alive
    r = cplab.run(q, k, v, backward=True, **CFG)
    assert r.dq.dtype == np.float64 and not r.dq.flags.owndata


def test_torch_tensor_in_place():
    torch = __import__("pytest").importorskip("torch", reason="torch is not installed")
    q, k, v = (torch.from_numpy(x) for x in _qkv())
    r = cplab.run(q, k, v, **CFG)
    assert r._r.inputs_seen["q"] == (q.data_ptr(), True)
