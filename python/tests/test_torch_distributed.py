"""cplab.torch.check_distributed on 4 CPU processes (gloo): each rank passes its own shards; every
rank gets the same report; a fault planted in every rank's outputs is named; a bad input on one rank raises
on every rank. Skipped, by name, when torch is not installed."""
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch to run cplab.torch's test)")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

SPEC = dict(mode="p2p", layout="zigzag", causal=True)
CP = 4


def _worker(rank, init, results):
    import cplab
    import cplab.torch as ct

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=CP)
    g = torch.Generator().manual_seed(0)
    seq, h, hk, d = 64, 4, 2, 8
    q, k, v, do = (torch.rand(seq, n, d, generator=g, dtype=torch.float64) * 2 - 1 for n in (h, hk, hk, h))
    r = cplab.run(q, k, v, do, cp=CP, backward=True, **SPEC)  # the reference, as a stand-in for the user's CP code
    idx = torch.as_tensor(r.indices(rank))
    local_in = {"q": q[idx], "k": k[idx], "v": v[idx], "do": do[idx]}
    s = {n: torch.from_numpy(a) for n, a in r.shard(rank).items()}
    out = []
    out.append(ct.check_distributed(local_in, s, **SPEC).verdict)
    s["dk"], s["dv"] = s["dv"], s["dk"]  # a bug in the code every rank runs: dK and dV returned swapped
    out.append(ct.check_distributed(local_in, s, **SPEC).verdict)
    try:
        bad = dict(local_in, q=local_in["q"][:, :, :3]) if rank == 1 else local_in
        ct.check_distributed(bad, s, **SPEC)
        out.append("no error")
    except ValueError as e:
        out.append("ValueError: " + str(e))
    results[rank] = out
    dist.destroy_process_group()


def test_check_distributed_gloo(tmp_path):
    init = "file://" + str(tmp_path / "rendezvous")
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(_worker, args=(init, results), nprocs=CP, join=True)
    got = [results[r] for r in range(CP)]
    for r in range(CP):
        print(f"rank {r}:", got[r])
    assert all(g == got[0] for g in got), "every rank gets the same report"
    assert got[0][0] == "equivalent"
    assert got[0][1].startswith("NOT equivalent") and "dK and dV swapped" in got[0][1]
    assert got[0][2].startswith("ValueError") and "q" in got[0][2]
