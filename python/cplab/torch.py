"""cplab.torch: cplab check across the ranks of a torch.distributed group.

What it is: check_distributed(inputs, outputs, **spec), called on EVERY rank of a torch.distributed
process group (any backend that has gather_object / broadcast_object_list: gloo, nccl, mpi) with
that rank's local shards: inputs {"q", "k", "v", optional "do"} and outputs {"o", optional "lse",
"dq", "dk", "dv"}, rank r's tokens in its local order of the layout (group rank r is CP rank r; the
group's size is cp). Rank 0 gathers every rank's tensors, puts the inputs back in global order
with the layout's own token indices (cplab.layout, the C++ Partition), checks the per-rank outputs
with cplab.check, and sends the report to every rank: each returns the same CheckReport. A bad
input on any rank raises the same ValueError on every rank (no rank is left waiting).
Tensors may be on a GPU (they are copied to the CPU) and of any dtype cplab.check reads.
What it is not: a distributed check (rank 0 checks everything: its memory must hold the global
inputs and the reference, as `cplab check` does), or an import of torch at `import cplab` (this
module imports it).
"""
import torch as _torch
import torch.distributed as _dist

from ._check import CheckReport, check
from ._commands import layout as _layout


def _local(d, name):
    if not isinstance(d, dict):
        raise TypeError(f"{name} must be a dict of tensors, got {type(d).__name__}")
    out = {}
    for k, t in d.items():
        if not isinstance(t, _torch.Tensor):
            raise TypeError(f"{name}['{k}'] is a {type(t).__name__}: check_distributed takes torch tensors")
        out[k] = t.detach().cpu().contiguous()
    return out


def _global_inputs(shards, spec):
    """The ranks' input shards (local order) in global order, by the layout's indices."""
    cp = len(shards)
    lay = {k: spec[k] for k in ("layout", "cu_seqlens", "pad") if spec.get(k) is not None}
    if "cu_seqlens" not in lay:  # one sequence: all the ranks' tokens
        lay["seq"] = sum(s["q"].shape[0] for s in shards if "q" in s)
    idx = [r["indices"] for r in _layout(cp=cp, **lay)["ranks"]]
    out = {}
    for name in shards[0]:
        if any(name not in s for s in shards):
            raise ValueError(f"inputs['{name}'] is given on some ranks but not on all")
        parts = [s[name] for s in shards]
        for r, p in enumerate(parts):
            if p.dim() != parts[0].dim() or p.shape[1:] != parts[0].shape[1:] or p.dtype != parts[0].dtype:
                raise ValueError(f"rank {r}'s inputs['{name}'] is {p.dtype} {tuple(p.shape)} but rank 0's is "
                                 f"{parts[0].dtype} {tuple(parts[0].shape)}: every rank's shard has the same heads, dims and dtype")
        g = _torch.empty((sum(p.shape[0] for p in parts),) + tuple(parts[0].shape[1:]), dtype=parts[0].dtype)
        for r, p in enumerate(parts):
            if p.shape[0] != len(idx[r]):
                raise ValueError(f"rank {r}'s inputs['{name}'] has {p.shape[0]} tokens but the layout gives it {len(idx[r])}")
            g[_torch.as_tensor(idx[r], dtype=_torch.long)] = p
        out[name] = g
    return out


def check_distributed(inputs, outputs, group=None, **spec):
    """Check the shards of every rank of `group` (default: the world) against cplab's reference.

    Call it on every rank with that rank's local inputs and outputs (its tokens in its local
    order); spec: cplab.check's options (mode=, layout=, causal=, ...); cp is the group's size.
    Returns the same CheckReport on every rank; raises the same ValueError on every rank when any
    rank's input is bad."""
    rank = _dist.get_rank(group)
    size = _dist.get_world_size(group)
    if spec.get("cp") not in (None, size):
        raise ValueError(f"cp={spec['cp']} but the process group has {size} ranks (one per CP rank)")
    try:
        payload = ("ok", _local(inputs, "inputs"), _local(outputs, "outputs"))
    except (TypeError, ValueError) as e:
        payload = ("error", f"rank {rank}: {e}", None)
    gathered = [None] * size if rank == 0 else None
    _dist.gather_object(payload, gathered, dst=_dist.get_global_rank(group, 0) if group is not None else 0, group=group)
    result = [None]
    if rank == 0:
        errors = [p[1] for p in gathered if p[0] == "error"]
        if errors:
            result[0] = ("error", "; ".join(errors))
        else:
            try:
                ins = _global_inputs([p[1] for p in gathered], spec)
                r = check(ins, [p[2] for p in gathered], cp=size, **{k: v for k, v in spec.items() if k != "cp"})
                result[0] = ("ok", (r._text, r._json_text, r.exit_status))
            except Exception as e:  # noqa: BLE001: every rank must hear of it, or they wait forever
                result[0] = ("error", str(e) if isinstance(e, (TypeError, ValueError)) else f"{type(e).__name__}: {e}")
    _dist.broadcast_object_list(result, src=_dist.get_global_rank(group, 0) if group is not None else 0, group=group)
    kind, value = result[0]
    if kind == "error":
        raise ValueError(value)
    return CheckReport(*value)
