"""Bad inputs raise ValueError or TypeError naming the argument and the rule, the command line's
message where it has one; nothing crashes the interpreter (a fuzz over random shapes, dtypes,
strides and options, each call in this process)."""
import numpy as np
import pytest

import cplab

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (bfloat16 arrays) is not installed")


def qkv(seq=16, h=2, hk=1, d=4, dtype=np.float64):
    rng = np.random.default_rng(1)
    return (rng.uniform(-1, 1, (seq, h, d)).astype(dtype), rng.uniform(-1, 1, (seq, hk, d)).astype(dtype),
            rng.uniform(-1, 1, (seq, hk, d)).astype(dtype))


def test_rule_broken_has_cli_message(cli):
    q, k, v = qkv(seq=12)
    with pytest.raises(ValueError) as e:
        cplab.run(q, k, v, cp=4, layout="zigzag")
    p = cli("run", "--cp", 4, "--layout", "zigzag", "--seq", 12, "--heads", 2, "--kv-heads", 1, "--head-dim", 4, check=False)
    assert p.returncode == 2
    assert str(e.value) in p.stderr  # "cplab: error: <the same rule>"
    with pytest.raises(ValueError, match="cp"):
        cplab.run(q, k, v, cp=0)
    with pytest.raises(ValueError, match="layout"):
        cplab.run(q, k, v, cp=2, layout="diagonal")
    with pytest.raises(ValueError, match="mode"):
        cplab.run(q, k, v, cp=2, mode="ring")


def test_shapes_named():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"\bk\b"):
        cplab.run(q, k[:, :, :3], v, cp=2)
    with pytest.raises(ValueError, match=r"\bq\b"):
        cplab.run(q[0], k, v, cp=2)
    with pytest.raises(ValueError, match="must be given together"):
        cplab.run(q, k, None, cp=2)
    with pytest.raises(ValueError, match="seq"):
        cplab.run(q, k, v, cp=2, seq=32)  # a size also given must agree
    with pytest.raises(ValueError, match="backward"):
        cplab.run(q, k, v, do=np.zeros((16, 2, 4)), cp=2)


def test_nan_named():
    q, k, v = qkv()
    q[3, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"\bq\b.*(NaN|nan)|(NaN|nan).*\bq\b"):
        cplab.run(q, k, v, cp=2)
    q, k, v = qkv()
    with pytest.raises(ValueError, match="inputs\\['k'\\]"):
        bad = k.copy()
        bad[0, 0, 0] = np.inf
        cplab.check({"q": q, "k": bad, "v": v}, {"o": np.zeros((16, 2, 4))}, cp=2)


def test_types_named():
    q, k, v = qkv()
    with pytest.raises(TypeError, match=r"\bq\b.*int"):
        cplab.run(q.astype(np.int32), k, v, cp=2)
    with pytest.raises(TypeError, match=r"\bq\b.*complex"):
        cplab.run(q.astype(np.complex128), k, v, cp=2)
    with pytest.raises(TypeError, match="q is a list"):
        cplab.run(q.tolist(), k, v, cp=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'cpp'"):
        cplab.run(q, k, v, cpp=2)
    with pytest.raises(TypeError, match="causal is a flag"):
        cplab.run(q, k, v, cp=2, causal="yes")
    with pytest.raises(TypeError, match="outputs must be a dict"):
        cplab.check({"q": q, "k": k, "v": v}, "o.npy", cp=2)
    with pytest.raises(ValueError, match="outputs has a key 'x'|outputs\\['x'\\]"):
        cplab.check({"q": q, "k": k, "v": v}, {"o": np.zeros((16, 2, 4)), "x": np.zeros(3)}, cp=2)
    with pytest.raises(ValueError, match="3 per-rank|list of 3"):
        cplab.check({"q": q, "k": k, "v": v}, [{"o": np.zeros((4, 2, 4))}] * 3, cp=4)


def test_odd_but_usable_arrays():
    """Big-endian, Fortran-ordered, negative-stride, zero-stride and bfloat16 arrays are read (one
    copy) and give the values they hold."""
    q, k, v = qkv()
    ref = cplab.run(q, k, v, cp=2)
    assert cplab.run(q.astype(">f8"), k, v, cp=2).o.tobytes() == ref.o.tobytes()
    assert cplab.run(np.asfortranarray(q), k, v, cp=2).o.tobytes() == ref.o.tobytes()
    flipped = q[::-1].copy()[::-1]  # a negative-stride view of the same values
    assert cplab.run(flipped, k, v, cp=2).o.tobytes() == ref.o.tobytes()
    bk = np.broadcast_to(k[:1], k.shape)  # zero stride
    assert cplab.run(q, bk, v, cp=2).o.shape == ref.o.shape
    b = cplab.run(q.astype(ml_dtypes.bfloat16), k.astype(ml_dtypes.bfloat16), v.astype(ml_dtypes.bfloat16), cp=2)
    c = cplab.run(q.astype(ml_dtypes.bfloat16).astype(np.float64), k.astype(ml_dtypes.bfloat16).astype(np.float64),
                  v.astype(ml_dtypes.bfloat16).astype(np.float64), cp=2)
    assert b.o.tobytes() == c.o.tobytes()


def test_fuzz_random_shapes_dtypes_options():
    """200 random calls: each returns or raises ValueError / TypeError; the interpreter survives."""
    rng = np.random.default_rng(12345)
    dtypes = [np.float64, np.float32, np.float16, ml_dtypes.bfloat16, np.int64, np.complex64, np.bool_]
    outcomes = {"ok": 0, "ValueError": 0, "TypeError": 0}
    for _ in range(200):
        dt = dtypes[int(rng.integers(len(dtypes)))]
        if rng.random() < 0.5:  # near-valid: 3-d, the same tokens, GQA heads, a float dtype most of the time
            seq, h, hk, d = (int(rng.choice(c)) for c in ([16, 32, 16, 12, 7], [2, 4], [1, 2, 2, 3], [4, 8]))
            if rng.random() < 0.8:
                dt = dtypes[int(rng.integers(4))]
            q = rng.uniform(-1, 1, (seq, h, d)).astype(dt)
            k = rng.uniform(-1, 1, (seq, hk, d)).astype(dt)
            v = rng.uniform(-1, 1, (seq, hk, d)).astype(dt)
        else:  # anything: 0-4 dimensions of 0-8
            nd = int(rng.integers(0, 5))
            shape = tuple(int(x) for x in rng.integers(0, 9, nd))
            q = rng.uniform(-1, 1, shape).astype(dt)
            k = rng.uniform(-1, 1, tuple(int(x) for x in rng.integers(0, 9, nd))).astype(dt)
            v = k.copy() if rng.random() < 0.7 else rng.uniform(-1, 1, shape).astype(dt)
        if rng.random() < 0.2 and q.ndim:
            q = q[::-1]
        opts = {"cp": 2}
        for key, choices in [("cp", [1, 2, 3, 4, 0, -1, 300]), ("layout", ["zigzag", "striped", "contiguous", "x"]),
                             ("mode", ["p2p", "allgather", "a2a", "a2a+p2p", "ring"]), ("causal", [True, False]),
                             ("window", [1, 3, 0, -2]), ("dtype", ["float", "double", "half"]), ("backward", [True, False]),
                             ("seq", [8, 7, 0]), ("heads", [2, 3]), ("kv_heads", [1, 5])]:
            if rng.random() < 0.2:
                opts[key] = choices[int(rng.integers(len(choices)))]
        try:
            if rng.random() < 0.7:
                cplab.run(q, k, v, **opts)
            else:
                opts.pop("dtype", None), opts.pop("backward", None)
                cplab.check({"q": q, "k": k, "v": v}, {"o": q, "lse": q}, **opts)
            outcomes["ok"] += 1
        except ValueError as e:
            assert str(e) and "\n" not in str(e).strip(), repr(e)
            outcomes["ValueError"] += 1
        except TypeError as e:
            assert str(e)
            outcomes["TypeError"] += 1
        except cplab.RunFailed:
            outcomes["ok"] += 1
    print("fuzz outcomes:", outcomes)
    assert outcomes["ok"] > 10 and outcomes["ValueError"] > 50 and outcomes["TypeError"] > 10


def test_run_failed_is_the_command_lines_exit_1(cli, tmp_path):
    """A float run that overflows (scores near 1e40) raises cplab.RunFailed with the command line's
    message; the command exits 1 with the same words."""
    q, k, v = np.full((16, 2, 4), 1e20), np.full((16, 1, 4), 1e20), np.ones((16, 1, 4))
    with pytest.raises(cplab.RunFailed) as e:
        cplab.run(q, k, v, cp=2, dtype="float")
    assert isinstance(e.value, RuntimeError)
    for name, a in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / f"{name}.npy", a)
    p = cli("run", "--cp", 2, "--dtype", "float", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v", tmp_path / "v.npy")
    assert p.returncode == 1
    assert str(e.value) in p.stderr
