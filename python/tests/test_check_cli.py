"""cplab.check against `cplab check --json`: the same inputs and outputs give the same report (the
sources, named inputs['q'] / outputs['o'] here and by path there, and the times aside), for correct
outputs and for outputs with a planted fault, global and per-rank, over modes, layouts, dtypes,
packing and masks."""
import json

import numpy as np
import pytest

import cplab
from conftest import cli_args

CASES = [
    # (spec, fault, output dtype)
    (dict(mode="p2p", layout="zigzag", causal=True, cp=4), None, "float64"),
    (dict(mode="p2p", layout="zigzag", causal=True, cp=4), "swap_dkdv", "float32"),
    (dict(mode="allgather", layout="striped", causal=True, cp=2, window=7), "scale_o", "float64"),
    (dict(mode="a2a", layout="contiguous", cp=2), "lse_base2", "float32"),
    (dict(mode="p2p", layout="zigzag", causal=True, cp=2, cu_seqlens=[0, 10, 34, 39], pad=True), None, "float32"),
    (dict(mode="p2p", layout="zigzag", causal=True, cp=2, chunk=8), "swap_dkdv", "float64"),
    (dict(mode="a2a+p2p", hcp=(2, 2), layout="zigzag", causal=True, cp=4), "shards_wrong_order", "float64"),
]


def _case(spec, fault, dtype, seed):
    if "cu_seqlens" in spec:  # the files hold the packed tokens, padding included
        seq = cplab.layout(cp=spec["cp"], cu_seqlens=spec["cu_seqlens"], pad=spec.get("pad", False))["cu_seqlens_padded"][-1]
    else:
        seq = 32 if spec["cp"] == 2 else 64
    rng = np.random.default_rng(seed)
    inputs = {"q": rng.uniform(-1, 1, (seq, 4, 8)), "k": rng.uniform(-1, 1, (seq, 2, 8)), "v": rng.uniform(-1, 1, (seq, 2, 8)),
              "do": rng.uniform(-1, 1, (seq, 4, 8))}
    r = cplab.run(**inputs, **spec, backward=True)
    out = {"o": r.o.copy(), "lse": r.lse.copy(), "dq": r.dq.copy(), "dk": r.dk.copy(), "dv": r.dv.copy()}
    if fault == "swap_dkdv":
        out["dk"], out["dv"] = out["dv"], out["dk"]
    elif fault == "scale_o":
        out["o"] = out["o"] * 2
    elif fault == "lse_base2":
        out["lse"] = out["lse"] / np.log(2)
    out = {k: v.astype(dtype) for k, v in out.items()}
    shards = None
    if fault == "shards_wrong_order" or seed % 2:
        shards = []
        for rank in range(spec["cp"]):
            idx = r.indices(rank)
            if fault == "shards_wrong_order":
                idx = list(range(rank * len(idx), (rank + 1) * len(idx)))  # contiguous instead of the layout's
            shards.append({"o": out["o"][idx], "lse": out["lse"][:, idx], "dq": out["dq"][idx], "dk": out["dk"][idx],
                           "dv": out["dv"][idx]})
    return inputs, out, shards


def _drop_times(x):
    if isinstance(x, dict):
        return {k: _drop_times(v) for k, v in x.items() if "seconds" not in k}
    if isinstance(x, list):
        return [_drop_times(v) for v in x]
    return x


def _normalized(j):
    """The report without what differs by design: where the tensors came from, and the times."""
    j = json.loads(j) if isinstance(j, str) else j
    j["inputs"].pop("dir", None)
    j.pop("outputs_dir", None)
    for o in j["outputs"].values():
        o.pop("source", None)
    if isinstance(j.get("dsinks"), dict):
        j["dsinks"].pop("source", None)
    return _drop_times(j)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_check_same_report_as_cli(cli, tmp_path, i):
    spec, fault, dtype = CASES[i]
    inputs, out, shards = _case(spec, fault, dtype, seed=i)
    (tmp_path / "in").mkdir()
    for k, v in inputs.items():
        np.save(tmp_path / "in" / f"{k}.npy", v)
    od = tmp_path / "out"
    od.mkdir()
    if shards is None:
        for k, v in out.items():
            np.save(od / f"{k}.npy", v)
    else:
        for rank, s in enumerate(shards):
            (od / f"rank{rank}").mkdir()
            for k, v in s.items():
                np.save(od / f"rank{rank}" / f"{k}.npy", np.ascontiguousarray(v))  # cplab check reads C order
    p = cli("check", *cli_args(spec), "--inputs", tmp_path / "in", "--outputs", od, "--json")
    rep = cplab.check(inputs, shards if shards is not None else out, **spec)
    assert rep.exit_status == p.returncode, (rep.verdict, p.stdout[:300], p.stderr)
    assert _normalized(rep.to_json()) == _normalized(p.stdout)
    assert rep.equivalent == (fault is None)
    text = cli("check", *cli_args(spec), "--inputs", tmp_path / "in", "--outputs", od).stdout
    assert str(rep).splitlines()[0] == text.splitlines()[0]  # the verdict line
    if fault == "swap_dkdv":
        assert "dK and dV swapped" in rep.verdict
    if fault is not None:
        assert rep.explaining, rep.verdict
        assert rep.error_map["o"].shape[0] == spec["cp"]


def test_assert_cp_equivalent_message():
    inputs, out, _ = _case(dict(mode="p2p", layout="zigzag", causal=True, cp=4), "swap_dkdv", "float64", seed=0)
    with pytest.raises(AssertionError) as e:
        cplab.testing.assert_cp_equivalent(inputs, out, mode="p2p", layout="zigzag", causal=True, cp=4)
    assert "NOT equivalent" in str(e.value) and "dK and dV swapped" in str(e.value)
    inputs, out, _ = _case(dict(mode="p2p", layout="zigzag", causal=True, cp=4), None, "float64", seed=0)
    rep = cplab.testing.assert_cp_equivalent(inputs, out, mode="p2p", layout="zigzag", causal=True, cp=4)
    assert rep.equivalent and bool(rep)
