"""sdpa_common.py: what sdpa_baseline.py and sdpa_error.py share: JSON-line output and the start-up.

What it is: emit(obj) (one JSON object per line on stdout, flushed: what cplab-bench reads), and
start(dtype_name, what, need_numpy) which imports PyTorch (and NumPy), checks that torch sees a CUDA
device, prints the {"info": ...} line and returns the modules and the torch dtype; on any failure it
prints {"error": ...} and returns None (the caller then exits 2).
What it is not: a benchmark or a judge (the two scripts are).
"""
import json


def emit(obj):
    print(json.dumps(obj), flush=True)


def start(dtype_name, what, need_numpy=False):
    """-> dict(torch, F, SDPBackend, sdpa_kernel, np, dtype) or None (the error line printed)"""
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        np = None
        if need_numpy:
            import numpy as np
    except Exception as e:  # noqa: BLE001 (any import failure means: not usable)
        needs = "PyTorch with torch.nn.attention" + (", and NumPy," if need_numpy else "")
        emit({"error": f"{needs} {'are' if need_numpy else 'is'} not usable here: {type(e).__name__}: {e}"})
        return None
    if not torch.cuda.is_available():
        emit({"error": f"torch {torch.__version__}: torch.cuda.is_available() is False (no CUDA device or driver)"})
        return None
    emit({"info": f"torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}) on "
                  f"{torch.cuda.get_device_name(0)}; {dtype_name}, {what}"})
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float16
    return {"torch": torch, "F": F, "SDPBackend": SDPBackend, "sdpa_kernel": sdpa_kernel, "np": np, "dtype": dtype}
