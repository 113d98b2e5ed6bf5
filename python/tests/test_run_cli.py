"""cplab.run against `cplab run --out-dir`: the same inputs give bit-identical outputs, over modes,
layouts, dtypes (of the run and of the input arrays), packing and masks; and the same --json report
(times aside)."""
import json

import numpy as np
import pytest

import cplab
from conftest import cli_args

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (bfloat16 arrays) is not installed")

CONFIGS = [
    dict(mode="p2p", layout="zigzag", causal=True, cp=4, seq=64, heads=4, kv_heads=2, head_dim=16, backward=True),
    dict(mode="p2p", layout="striped", causal=True, cp=4, seq=64, heads=2, kv_heads=1, head_dim=8, window=9, dtype="float"),
    dict(mode="allgather", layout="zigzag", causal=True, cp=2, seq=48, heads=4, kv_heads=4, head_dim=8, chunk=10, backward=True),
    dict(mode="a2a", layout="contiguous", cp=2, seq=32, heads=4, kv_heads=2, head_dim=8, sinks=True, backward=True, dtype="float"),
    dict(mode="a2a+p2p", hcp=(2, 2), layout="zigzag", causal=True, cp=4, seq=64, heads=4, kv_heads=2, head_dim=8, backward=True),
    dict(mode="p2p", layout="zigzag", causal=True, cp=2, cu_seqlens=[0, 10, 34, 39], pad=True, heads=2, kv_heads=1, head_dim=8,
         backward=True, dtype="float"),
    dict(mode="p2p", layout="zigzag", causal=True, cp=2, seq=32, heads=2, kv_heads=2, head_dim=8, merge="fold", scale=0.3),
]
INPUT_DTYPES = ["float64", "float32", "float16", "bfloat16"]


def _inputs(cfg, dtype, seed):
    rng = np.random.default_rng(seed)
    seq = cfg["cu_seqlens"][-1] if "cu_seqlens" in cfg else cfg["seq"]
    if cfg.get("pad"):
        seq = sum(-(-(b - a) // (2 * cfg["cp"])) * 2 * cfg["cp"] for a, b in zip(cfg["cu_seqlens"], cfg["cu_seqlens"][1:]))
    h, hk, d = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    t = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = {"q": rng.uniform(-1, 1, (seq, h, d)), "k": rng.uniform(-1, 1, (seq, hk, d)), "v": rng.uniform(-1, 1, (seq, hk, d))}
    if cfg.get("backward"):
        x["do"] = rng.uniform(-1, 1, (seq, h, d))
    return {k: v.astype(t) for k, v in x.items()}


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_run_bit_identical_to_cli(cli, tmp_path, i):
    cfg = CONFIGS[i]
    dtype = INPUT_DTYPES[i % len(INPUT_DTYPES)]
    x = _inputs(cfg, dtype, seed=i)
    files = []
    for name, a in x.items():
        np.save(tmp_path / f"{name}.npy", a)
        files += ["--" + name, tmp_path / f"{name}.npy"]
    sizes = {"seq", "heads", "kv_heads", "head_dim"}  # from the arrays (the CLI: from the files)
    cli_cfg = {k: v for k, v in cfg.items() if k not in sizes}
    p = cli("run", *cli_args(cli_cfg), *files, "--out-dir", tmp_path / "out", "--json")
    assert p.returncode == 0, p.stderr
    r = cplab.run(**x, **cli_cfg)
    for name in ["o", "lse", "dq", "dk", "dv", "dsinks"]:
        f = tmp_path / "out" / f"{name}.npy"
        mine = getattr(r, name)
        if not f.exists():
            assert mine is None, name
            continue
        theirs = np.load(f)
        assert mine.dtype == theirs.dtype, name
        assert mine.shape == theirs.shape, name
        assert mine.tobytes() == theirs.tobytes(), f"{name} differs from cplab run's {f}"
    theirs = json.loads(p.stdout)
    mine = dict(r.report)
    # the times differ, and so does the memory estimate of a float run: the binding also keeps the
    # float32 outputs it hands out (RunSpec::keep_run_dtype), and the estimate counts them
    for j in (mine, theirs):
        for k in ("seconds", "reference_seconds", "memory_estimate"):
            j.pop(k, None)
    assert mine == theirs


def test_random_inputs_match_cli(cli, tmp_path):
    """Without arrays, cplab.run uses the command's seeded inputs: the same outputs."""
    cfg = dict(mode="p2p", cp=2, seq=32, heads=2, kv_heads=1, head_dim=8, causal=True, backward=True, seed=7)
    cli("run", *cli_args(cfg), "--out-dir", tmp_path)
    r = cplab.run(**cfg)
    for name in ["o", "lse", "dq", "dk", "dv"]:
        assert getattr(r, name).tobytes() == np.load(tmp_path / f"{name}.npy").tobytes(), name


def test_shards_and_trace(tmp_path):
    r = cplab.run(mode="p2p", layout="zigzag", causal=True, cp=4, seq=32, heads=2, kv_heads=1, head_dim=8, backward=True)
    lay = cplab.layout(cp=4, seq=32, layout="zigzag")
    for rank in range(4):
        s = r.shard(rank)
        idx = lay["ranks"][rank]["indices"]
        assert r.indices(rank) == idx
        np.testing.assert_array_equal(s["o"], r.o[idx])
        np.testing.assert_array_equal(s["lse"], r.lse[:, idx])
        np.testing.assert_array_equal(s["dk"], r.dk[idx])
    with pytest.raises(ValueError, match="rank 4 is not a rank"):
        r.shard(4)
    t = r.trace
    assert t["meta"]["mode"] == "p2p" and len(t["events"]) > 0
    sent = sum(e.get("bytes", 0) for e in t["events"] if e.get("kind") == "send")
    assert sent > 0 and sent == sum(r.report["bytes_sent_per_rank"])
    r.write_chrome_trace(tmp_path / "t.json")
    chrome = json.loads((tmp_path / "t.json").read_text())
    assert "traceEvents" in chrome
    r.write_trace(tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text()) == t
    assert all(v < 1e-10 for v in r.errors.values() if v is not None)
