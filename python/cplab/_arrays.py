"""_arrays.py: what the Python layer does to an array before the C++ side takes it (arrays.h).

What it is: prepared(x, name): NumPy arrays, PyTorch / JAX CPU tensors and other objects exposing
__dlpack__ or the buffer protocol pass through untouched (the C++ side uses C-contiguous memory in
place and copies other strides once); ml_dtypes' bfloat16 NumPy arrays become (uint16 view, True),
which the C++ side reads as bfloat16 bits; a NumPy array in big-endian byte order is converted
once; an object with only __array__ goes through numpy.asarray. Anything else is a TypeError naming
the argument.
What it is not: shape or value checks (the C++ side names every broken rule).
"""
import numpy as np


def prepared(x, name):
    if isinstance(x, np.ndarray):
        if x.dtype.name == "bfloat16":  # ml_dtypes.bfloat16: no DLPack or buffer-protocol code for it
            return (x.view(np.uint16), True)
        if x.dtype.byteorder == ">":
            return x.astype(x.dtype.newbyteorder("<"))
        return x
    if hasattr(x, "__dlpack__"):
        if getattr(x, "requires_grad", False) and hasattr(x, "detach"):
            return x.detach()  # DLPack refuses a tensor that requires grad; the values are the same memory
        return x
    if isinstance(x, (memoryview, bytes, bytearray)):
        return x
    if hasattr(x, "__array__"):
        return prepared(np.asarray(x), name)
    raise TypeError(f"{name} is a {type(x).__name__}: cplab needs an array (NumPy, PyTorch CPU tensor, "
                    "or an object with __dlpack__ or __array__)")
