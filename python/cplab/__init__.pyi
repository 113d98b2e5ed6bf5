# __init__.pyi: the types of `import cplab`, so that an editor completes every argument. The keyword
# arguments of run() and check() are the options of `cplab run` and `cplab check` ("_" for "-");
# python/tests/test_stubs.py checks that they are exactly those (minus the file options).
from typing import Any, Literal, Sequence, Union

import numpy as np

from . import testing as testing

ArrayLike = Any  # a NumPy array, a PyTorch / JAX CPU tensor, or any object with __dlpack__ / __array__
Mode = Literal["p2p", "allgather", "a2a", "a2a+p2p"]
Layout = Literal["contiguous", "zigzag", "striped"]

__version__: str

class RunFailed(RuntimeError): ...

class RunResult:
    report: dict[str, Any]
    @property
    def o(self) -> np.ndarray: ...
    @property
    def lse(self) -> np.ndarray: ...
    @property
    def dq(self) -> np.ndarray | None: ...
    @property
    def dk(self) -> np.ndarray | None: ...
    @property
    def dv(self) -> np.ndarray | None: ...
    @property
    def dsinks(self) -> np.ndarray | None: ...
    @property
    def errors(self) -> dict[str, float | None]: ...
    @property
    def trace(self) -> dict[str, Any]: ...
    def shard(self, rank: int) -> dict[str, np.ndarray]: ...
    def indices(self, rank: int) -> list[int]: ...
    def write_trace(self, path: str) -> None: ...
    def write_chrome_trace(self, path: str) -> None: ...

class CheckReport:
    json: dict[str, Any]
    exit_status: int
    @property
    def equivalent(self) -> bool: ...
    @property
    def verdict(self) -> str: ...
    @property
    def errors(self) -> dict[str, float | None]: ...
    @property
    def tolerances(self) -> dict[str, float]: ...
    @property
    def hypotheses(self) -> list[dict[str, Any]]: ...
    @property
    def explaining(self) -> list[dict[str, Any]]: ...
    @property
    def error_map(self) -> dict[str, np.ndarray]: ...
    def to_json(self) -> str: ...
    def __bool__(self) -> bool: ...

def run(
    q: ArrayLike | None = None,
    k: ArrayLike | None = None,
    v: ArrayLike | None = None,
    do: ArrayLike | None = None,
    *,
    mode: Mode = "p2p",
    hcp: Sequence[int] | str | None = None,
    cu_seqlens: Sequence[int] | None = None,
    pad: bool = False,
    replicate_kv: bool = False,
    cp: int = 4,
    seq: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    v_head_dim: int | None = None,
    causal: bool = False,
    window: int | None = None,
    chunk: int | None = None,
    sinks: Union[bool, ArrayLike] = False,
    layout: Layout = "zigzag",
    merge: Literal["streaming", "fold"] = "streaming",
    scale: float = 0.0,
    backward: bool = False,
    dtype: Literal["float", "double"] = "double",
    precision: str | None = None,
    seed: int = 0,
    allow_long: bool = False,
) -> RunResult: ...

def check(
    inputs: dict[str, ArrayLike],
    outputs: Union[dict[str, ArrayLike], Sequence[dict[str, ArrayLike]]],
    *,
    mode: Mode = "p2p",
    hcp: Sequence[int] | str | None = None,
    cu_seqlens: Sequence[int] | None = None,
    pad: bool = False,
    replicate_kv: bool = False,
    cp: int = 4,
    seq: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    v_head_dim: int | None = None,
    causal: bool = False,
    window: int | None = None,
    chunk: int | None = None,
    sinks: bool = False,
    layout: Layout = "zigzag",
    merge: Literal["streaming", "fold"] = "streaming",
    scale: float = 0.0,
    tolerance: float | None = None,
    precision: str | None = None,
    allow_long: bool = False,
) -> CheckReport: ...

def layout(*, cp: int = ..., seq: int = ..., layout: Layout = ..., cu_seqlens: Sequence[int] | None = ...,
           pad: bool = ...) -> dict[str, Any]: ...
def schedule(lengths: Sequence[int] | None = None, **options: Any) -> dict[str, Any]: ...
def plan(**options: Any) -> dict[str, Any]: ...
def gemm_backend() -> str: ...
