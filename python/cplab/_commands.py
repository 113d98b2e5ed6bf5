"""_commands.py: cplab.layout, cplab.schedule and cplab.plan: `cplab layout|schedule|plan --json`
run inside this process (no subprocess), their JSON returned as plain Python data.

What it is: each function turns its keyword arguments into the command's options (_options.py),
runs the command line's own code (app/embedded.h cli_capture) and parses what it printed; options()
lists a command's options from the C++ registration, for the keyword checks of every function.
A broken rule raises ValueError with the command line's message.
What it is not: a reimplementation of any of them (the JSON is the command's, field for field:
docs/layout.md, docs/dcp.md, docs/plan.md describe it).
"""
import functools
import json

from . import _cplab, _options


@functools.lru_cache(maxsize=None)
def options(command):
    """(names, flags): the long option names of `cplab COMMAND`, and those that are flags."""
    pairs = _cplab._options(command)
    return frozenset(n for n, _ in pairs), frozenset(n for n, f in pairs if f)


def _json_command(command, function, kwargs, exclude=()):
    known, flags = options(command)
    args = [command] + _options.args(function, kwargs, known - {"json", "help", *exclude}, flags) + ["--json"]
    status, out = _cplab._cli(args)
    if status != 0:
        raise ValueError(f"cplab {command} exited with status {status}: {out.strip()}")
    return json.loads(out)


def layout(**options):
    """Each rank's tokens under a layout: `cplab layout --json` as a dict.

    options: cp=4, seq=32, layout="contiguous" | "zigzag" | "striped", cu_seqlens=[0, 12, 36, 42],
    pad=True. Returns {"layout", "cp", "cu_seqlens", ..., "ranks": [{"rank", "indices" (global token
    positions in local order), "positions" (RoPE position of each inside its sequence), "padding"
    flags, ...}]}."""
    return _json_command("layout", "layout", options)


def schedule(lengths=None, **options):
    """The dynamic-CP schedulers (Megatron's BalancedCPScheduler and cplab's) on one batch of
    sequence lengths, with the bound: `cplab schedule --json` as a dict.

    lengths: the batch's sequence lengths (a list); options: ranks=, max_seqlen_per_rank=,
    scheduler="megatron" | "cplab", cost="l2" | "overhead", cost_param=, or dist= (a data/dcp/*.json
    file), batches=, batch_size=, seed= for random batches."""
    if lengths is not None:
        options = dict(options, lengths=list(lengths))
    return _json_command("schedule", "schedule", options)


def plan(**options):
    """The planner's prediction of every CP mode for a sequence on a GPU cluster: `cplab plan --json`
    as a dict (rows ranked by predicted time, with the assumptions).

    options: seq=, heads=, kv_heads=, head_dim=, cp= (or gpus=), gpus_per_node=, no_causal=True,
    forward_only=True, gpu="h100" ..., intra=, inter=, tflops=, kv_cache= (inference), ..."""
    return _json_command("plan", "plan", options)
