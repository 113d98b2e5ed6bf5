"""The package loads OpenBLAS with the kernels the cplab programs use (python/cplab/_env.py): on a
CPU with AVX2 it must not run OpenBLAS's generic Prescott kernels (3-5x slower)."""
import cplab
from cplab import _env


def test_blas_kernels():
    backend = cplab.gemm_backend()
    print("products:", backend)
    flags = _env._cpu_flags()
    if "OpenBLAS" in backend and {"avx2", "fma"} <= flags:
        assert "Prescott" not in backend, backend
