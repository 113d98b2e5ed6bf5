"""cplab: context-parallel attention, taught and proven, from Python.

The exact CPU reference of every CP mode (ring / p2p with zigzag or striped layouts, all-gather KV,
Ulysses all-to-all, hierarchical a2a+p2p; causal, window, chunk and sink masks; THD packing) and
`cplab check`, which reads another CP implementation's outputs and names what it got wrong, on
NumPy arrays and PyTorch / JAX CPU tensors. A thin binding of the same C++ libraries the `cplab`
command runs: the same options, defaults, rules and messages.

    import cplab
    r = cplab.run(q, k, v, mode="p2p", cp=4, layout="zigzag", causal=True)   # r.o, r.lse, r.errors
    report = cplab.check({"q": q, "k": k, "v": v}, {"o": o, "lse": lse}, mode="p2p", cp=4, causal=True)
    print(report)               # the verdict, and the fault when there is one
    cplab.layout(cp=4, seq=16)  # each rank's tokens
    cplab.schedule([8192, 4096, 2048], ranks=8, max_seqlen_per_rank=4096)
    cplab.plan(seq=131072, cp=8)

cplab.testing.assert_cp_equivalent is for test suites; cplab.torch.check_distributed checks the
shards of every rank of a torch.distributed group. Docs: docs/python.md.
"""
from . import _env

_env.prepare()  # before the C++ module loads OpenBLAS and OpenMP (_env.py)

from . import _cplab  # noqa: E402
from ._check import CheckReport, check  # noqa: E402
from ._commands import layout, plan, schedule  # noqa: E402
from ._run import RunResult, run  # noqa: E402
from . import testing  # noqa: E402

RunFailed = _cplab.RunFailed
__version__ = "0.1.0"


def gemm_backend():
    """The library and kernels of the CPU products (the `products:` line of `cplab run`)."""
    return _cplab._gemm_backend()


__all__ = ["run", "check", "layout", "schedule", "plan", "RunResult", "CheckReport", "RunFailed", "testing",
           "gemm_backend", "__version__"]
