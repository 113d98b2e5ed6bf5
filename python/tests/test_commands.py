"""cplab.layout, cplab.schedule and cplab.plan return what `cplab layout|schedule|plan --json`
prints, and the command line's messages for bad options."""
import json

import pytest

import cplab


@pytest.mark.parametrize("kw,args", [
    (dict(cp=4, seq=32, layout="zigzag"), ["--cp", "4", "--seq", "32", "--layout", "zigzag"]),
    (dict(cp=2, cu_seqlens=[0, 10, 34, 39], pad=True), ["--cp", "2", "--cu-seqlens", "0,10,34,39", "--pad"]),
])
def test_layout(cli, kw, args):
    assert cplab.layout(**kw) == json.loads(cli("layout", *args, "--json").stdout)


def test_schedule(cli):
    mine = cplab.schedule([8192, 4096, 2048, 1024], ranks=8, max_seqlen_per_rank=4096)
    theirs = json.loads(cli("schedule", "--lengths", "8192,4096,2048,1024", "--ranks", "8", "--max-seqlen-per-rank", "4096",
                            "--json").stdout)
    for j in (mine, theirs):  # solver times
        j.pop("seconds", None)
    assert mine.keys() == theirs.keys()
    assert mine["rounds"] == theirs["rounds"]


def test_plan(cli):
    mine = cplab.plan(seq=131072, cp=8, heads=32, kv_heads=8, head_dim=128)
    theirs = json.loads(cli("plan", "--seq", "131072", "--cp", "8", "--heads", "32", "--kv-heads", "8", "--head-dim", "128",
                            "--json").stdout)
    assert mine == theirs


def test_bad_options():
    with pytest.raises(ValueError, match="seq"):
        cplab.layout(cp=4, seq=30, layout="zigzag")
    with pytest.raises(TypeError, match="unexpected keyword argument 'rank'"):
        cplab.layout(rank=4)
    with pytest.raises(ValueError):
        cplab.schedule([0, -5], ranks=8)
