"""_run.py: cplab.run, one CP configuration on simulated ranks checked against dense attention.

What it is: run(q, k, v, do, **options) -> RunResult, `cplab run` from Python: the same options,
defaults and rules (the C++ command line's own, app/embedded.h), Q, K, V and dO from arrays instead
of .npy files (or, without them, the command's seeded random inputs), and the outputs as NumPy
arrays instead of --out-dir's files, with the same values bit for bit. RunResult holds the outputs
in global token order, shard(rank) for a rank's tensors in its local order, the errors against
dense attention, the --json report and the trace.
What it is not: the run (the C++ reference), or inference steps (kv_cache=: use the command line).
"""
import json

from . import _arrays, _cplab, _options


class RunResult:
    """The outputs of a CP run (global token order), its errors against dense attention in double,
    its per-rank report and its trace.

    o (seq, heads, v_head_dim), lse (heads, seq), dq (seq, heads, head_dim), dk (seq, kv_heads,
    head_dim), dv (seq, kv_heads, v_head_dim) and dsinks (heads,): read-only NumPy arrays, float32
    for dtype="float" and float64 for "double", exactly what `cplab run --out-dir` writes. They are
    views of the C++ run's own buffers (no copy); each keeps the result's memory alive. dq, dk, dv
    are None without backward=True, dsinks without sinks and backward.
    """

    def __init__(self, native):
        self._r = native
        self._float = native.o.dtype.name == "float32"
        self.report = json.loads(native.report_json())
        """the `cplab run --json` report: spec, errors, per-rank FLOPs, bytes and messages, times"""
        self._trace = None

    o = property(lambda self: self._r.o, doc="O (seq, heads, v_head_dim), global order")
    lse = property(lambda self: self._r.lse, doc="LSE (heads, seq), natural log, global order")
    dq = property(lambda self: self._r.dq, doc="dQ (seq, heads, head_dim) or None")
    dk = property(lambda self: self._r.dk, doc="dK (seq, kv_heads, head_dim) or None")
    dv = property(lambda self: self._r.dv, doc="dV (seq, kv_heads, v_head_dim) or None")

    @property
    def dsinks(self):
        """d s_h (heads,) with sinks and backward, else None (float32 for dtype="float", a copy)"""
        x = self._r.dsinks
        if x is None or not self._float:
            return x
        return x.astype("float32")

    @property
    def errors(self):
        """max|x - ref| / max|ref| per output ("o", "lse", "dq", "dk", "dv", "dsinks"; None when not run)"""
        return dict(self.report["errors"])

    def shard(self, rank):
        """Rank `rank`'s tensors in its local order (the layout's order, as that rank held them):
        a dict o, lse (and dq, dk, dv with backward) of new arrays."""
        return self._r.shard(rank)

    def indices(self, rank):
        """The global token positions of rank `rank`'s local tokens, in local order."""
        return self._r.indices(rank)

    @property
    def trace(self):
        """Every message and tile of the run, as cplab's trace JSON (docs/trace.md) parsed into
        Python objects: {"version", "meta", "ranks", "events": [...]}."""
        if self._trace is None:
            self._trace = json.loads(self._r.trace_json())
        return self._trace

    def write_trace(self, path):
        """Write the trace as `cplab run --trace` does (cplab JSON, docs/trace.md)."""
        self._r.write_trace(str(path), False)

    def write_chrome_trace(self, path):
        """Write the trace as Chrome trace-event JSON (Perfetto, chrome://tracing), as `cplab run --chrome-trace`."""
        self._r.write_trace(str(path), True)

    def __repr__(self):
        r = self.report
        errs = ", ".join(f"{k} {v:.2e}" for k, v in r["errors"].items() if v is not None)
        return f"<cplab.RunResult {r['mode']} {r['layout']} cp {r['cp']} seq {r['seq']} {r['dtype']}: errors {errs}>"


def run(q=None, k=None, v=None, do=None, **options):
    """Run one CP configuration on simulated ranks and check it against dense attention in double.

    q (seq, heads, head_dim), k (seq, kv_heads, head_dim), v (seq, kv_heads, v_head_dim), do (seq,
    heads, v_head_dim; needs backward=True): arrays in global token order, float16 / bfloat16 /
    float32 / float64 (NumPy, PyTorch or JAX CPU tensors, ml_dtypes bfloat16). A float64
    C-contiguous array is used in place (not copied); any other is converted once. Without q, k, v
    the inputs are `cplab run`'s seeded random ones (seed=).

    options: those of `cplab run` with "_" for "-", e.g. mode="p2p" | "allgather" | "a2a" |
    "a2a+p2p", cp=4, layout="zigzag", causal=True, window=, chunk=, sinks=True or an array of the
    sink logits (heads,), cu_seqlens=[0, 12, 36], pad=True, hcp=(2, 2), kv_heads=, scale=,
    merge="fold", backward=True, dtype="float" | "double", precision="inputs=bf16,...", seed=,
    allow_long=True. Sizes come from the arrays; a size also given must agree. Defaults are the
    command's (mode p2p, layout zigzag, cp 4, dtype double, ...).

    Raises ValueError with the command line's message for a broken rule, TypeError for an
    argument that is not an array or an unknown keyword, cplab.RunFailed when an output is not
    finite (a float overflow: the command's exit 1). Ctrl-C interrupts it (KeyboardInterrupt); the
    GIL is released while it runs.
    """
    from . import _commands

    known, flags = _commands.options("run")
    arrays = {"q": q, "k": k, "v": v, "do": do}
    sinks = options.get("sinks")
    sink_array = None
    if sinks is not None and not isinstance(sinks, bool):
        sink_array = _arrays.prepared(sinks, "sinks")
        options = dict(options, sinks=True)
    for name in ("kv_cache", "cache_layout"):
        if options.get(name) is not None:
            raise ValueError(f"{name}=: inference steps are not in the Python binding yet; use `cplab run --kv-cache`")
    args = _options.args("run", options, known - {"q", "k", "v", "do", "out-dir", "trace", "chrome-trace",
                                                   "plan-only", "json", "sink-logits", "kv-cache", "cache-layout"}, flags)
    given = {n: _arrays.prepared(a, n) for n, a in arrays.items() if a is not None}
    native = _cplab._run(args, given.get("q"), given.get("k"), given.get("v"), given.get("do"), sink_array)
    return RunResult(native)
