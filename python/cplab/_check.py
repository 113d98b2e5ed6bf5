"""_check.py: cplab.check, another CP implementation's outputs against the reference, and what it
got wrong, from arrays.

What it is: check(inputs, outputs, **spec) -> CheckReport, `cplab check` from Python: inputs a dict
(q, k, v, optional do and sinks; global token order), outputs a dict (o, and optionally lse, dq,
dk, dv, dsinks; global order) or a list of per-rank dicts (rank r's tensors in its local order of
the layout), spec the options of `cplab check` ("_" for "-"). The rules, the check and its report
are the command line's (app/embedded.h): str(report) is the text `cplab check` prints,
report.to_json() the JSON of `cplab check --json` (sources named inputs['q'], outputs['o'] instead
of file paths). CheckReport also gives the verdict, the ranked hypotheses with their evidence and
the error map as arrays.
What it is not: the check (reference/check/), or inference checks (kv_cache=: use the command line).
"""
import json

import numpy as np

from . import _arrays, _cplab, _options


class CheckReport:
    """The report of cplab.check.

    equivalent (bool), verdict (its first line), exit_status (`cplab check`'s: 0 equivalent, 1 not),
    errors {output: max|x - ref| / max|ref|}, tolerances, hypotheses (every fault tested, those that
    explain the outputs first, best first: dicts with id, name, explains, level and per output the
    prediction's error), error_map {output: array (ranks, chunks per rank, heads)}, json (the
    parsed JSON); str() the text report, to_json() the JSON text.
    """

    def __init__(self, text, json_text, exit_status):
        self._text = text
        self._json_text = json_text
        self.json = json.loads(json_text)
        self.exit_status = exit_status

    @property
    def equivalent(self):
        return self.exit_status == 0

    @property
    def verdict(self):
        return self.json["verdict"]

    @property
    def errors(self):
        return {k: v["error"] for k, v in self.json["outputs"].items()}

    @property
    def tolerances(self):
        return {k: v["tolerance"] for k, v in self.json["outputs"].items()}

    @property
    def hypotheses(self):
        return self.json.get("diagnosis", [])

    @property
    def explaining(self):
        """The hypotheses that explain the outputs, best first (empty: none known)."""
        return [h for h in self.hypotheses if h.get("explains")]

    @property
    def error_map(self):
        """{output: float64 array (ranks, chunks per rank, heads)}: max |x - ref| over the cell's
        finite values / max |ref| over the output (NaN: the cell had no finite value)."""
        m = self.json.get("error_map")
        if not m:
            return {}
        # values[rank][chunk][head], null (no finite value) as NaN
        return {k: np.array(v["values"], dtype=float) for k, v in m["outputs"].items()}

    def to_json(self):
        """The report as `cplab check --json` prints it."""
        return self._json_text

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"<cplab.CheckReport: {self.verdict}>"

    def __bool__(self):
        return self.equivalent


def _tensors(d, name):
    if not isinstance(d, dict):
        raise TypeError(f"{name} must be a dict of arrays (name -> array), got {type(d).__name__}")
    return {k: _arrays.prepared(v, f"{name}['{k}']") for k, v in d.items()}


def check(inputs, outputs, **spec):
    """Check another CP implementation's outputs against cplab's reference and name the fault.

    inputs: {"q": (seq, heads, head_dim), "k": (seq, kv_heads, head_dim), "v": (seq, kv_heads,
    v_head_dim), optional "do": (seq, heads, v_head_dim), "sinks": (heads,)} in global token order.
    outputs: {"o": (seq, heads, v_head_dim), optional "lse": (heads, seq), "dq", "dk", "dv",
    "dsinks"} in global order, or a list of cp dicts, rank r's tensors in its local order
    (seq/cp tokens; lse (heads, seq/cp)). Arrays: float16 / bfloat16 / float32 / float64 (NumPy,
    PyTorch or JAX CPU tensors); float64 C-contiguous ones are read in place, others converted once.
    spec: the options of `cplab check`: mode=, cp=, layout=, causal=, window=, chunk=, sinks=True,
    cu_seqlens=, pad=, hcp=, merge=, scale=, tolerance= or precision=, allow_long=. Sizes come from
    the arrays; a size also given must agree.

    Returns a CheckReport (bool(report) is report.equivalent). Raises ValueError naming the argument
    and the rule for bad input, TypeError for a non-array or an unknown keyword. Ctrl-C interrupts it.
    """
    from . import _commands

    for name in ("kv_cache", "cache_layout"):
        if spec.get(name) is not None:
            raise ValueError(f"{name}=: inference checks are not in the Python binding yet; use `cplab check --kv-cache`")
    known, flags = _commands.options("check")
    args = _options.args("check", spec, known - {"inputs", "outputs", "out", "json", "sink-logits", "kv-cache", "cache-layout"}, flags)
    ins = _tensors(inputs, "inputs")
    if isinstance(outputs, (list, tuple)):
        outs = [_tensors(d, f"outputs[{r}]") for r, d in enumerate(outputs)]
    else:
        outs = _tensors(outputs, "outputs")
    text, json_text, status = _cplab._check(args, ins, outs)
    return CheckReport(text, json_text, status)
