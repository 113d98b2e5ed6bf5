#!/usr/bin/env python3
"""sdpa_error.py: PyTorch SDPA's outputs on cplab-bench's exact inputs, for the accuracy yardstick.

What it is: for each --case DIR,causal, loads the float32 .npy files cplab-bench wrote for sequence 0
of a shape, DIR/q.npy (s, h, d), DIR/k.npy and DIR/v.npy (s, hk, d) and, with --pass bwd or both,
DIR/dout.npy (s, h, d), whose values are exactly representable in --dtype; casts them to the dtype
(checked exact) and runs torch.nn.functional.scaled_dot_product_attention under
sdpa_kernel([SDPBackend.FLASH_ATTENTION]) and, separately, [SDPBackend.CUDNN_ATTENTION]. Layout as in
sdpa_baseline.py: token-major (1, s, h, d) memory handed to SDPA as (1, h, s, d) views; scale 1/sqrt(d);
causal top-left; GQA via enable_gqa=True, or K and V repeated to h heads inside the autograd graph
(so dK, dV are still per KV head) where that fails. Each backend's results go to DIR as float32:
  <backend>_o.npy (s, h, d)                           forward O (computed with grad when bwd is asked)
  <backend>_dq.npy (s, h, d), _dk.npy, _dv.npy (s, hk, d)  o.backward(dout), with --pass bwd or both
No LSE: SDPA's public API returns only O (the LSE is in private aten ops only), so it is not compared.
Output, one JSON object per line on stdout:
  {"info": "..."}                                     first: torch version, device
  {"case": DIR, "backend": "flash"|"cudnn", "s", "d", "h", "hk", "causal", "gqa", "outputs": [...]}
  {"case": DIR, "backend": ..., "error": "..."}       that backend could not run that case
  {"error": "..."}, exit status 2                     no torch / numpy, no CUDA device, bad arguments
What it is not: a judge (cplab-bench compares these outputs and its own with the CPU reference, on the
same rows and with the same metric), or a timer (sdpa_baseline.py times SDPA).
"""
import argparse
import os
import sys

from sdpa_common import emit, start

BACKENDS = ("flash", "cudnn")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--pass", dest="which", default="both", choices=["fwd", "bwd", "both"])
    p.add_argument("--case", action="append", default=[], help="DIR,causal(0|1): a directory of inputs; repeatable")
    args = p.parse_args()
    cases = []
    for text in args.case:
        path, sep, causal = text.rpartition(",")
        if not sep or not path or causal not in ("0", "1"):
            raise ValueError(f"'{text}' (expected DIR,0 or DIR,1)")
        cases.append((path, causal == "1"))
    if not cases:
        raise ValueError("no --case given")
    return args, cases


def load(np, torch, dtype, path):
    """float32 file -> (1, s, heads, d) CUDA tensor of dtype; raises if a value is not exact in dtype."""
    x = torch.from_numpy(np.ascontiguousarray(np.load(path), dtype=np.float32)).to("cuda")
    y = x.to(dtype)
    if x.dim() != 3 or not bool((y.float() == x).all()):
        raise ValueError(f"{path}: not a (s, heads, d) array of values exact in {dtype}")
    return y.unsqueeze(0)


def save(np, path, t):  # (1, s, heads, d) -> float32 (s, heads, d)
    np.save(path, t[0].detach().float().contiguous().cpu().numpy())


def run_case(np, torch, F, sdpa_kernel, backend, name, case, args, dtype):
    """writes DIR/<name>_*.npy; returns (gqa, outputs, shape); raises on any failure."""
    path, causal = case
    bwd = args.which in ("bwd", "both")
    q, k, v = (load(np, torch, dtype, os.path.join(path, f + ".npy")) for f in ("q", "k", "v"))
    _, s, h, d = q.shape
    hk = k.shape[2]
    if k.shape != (1, s, hk, d) or v.shape != k.shape or h % hk:
        raise ValueError(f"{path}: q {tuple(q.shape[1:])}, k {tuple(k.shape[1:])}, v {tuple(v.shape[1:])} do not fit")
    qg, kg, vg = (x.detach().requires_grad_(bwd) for x in (q, k, v))

    def forward(gqa_via):  # SDPA on (1, heads, s, d) views of the token-major tensors
        qt, kt, vt = qg.transpose(1, 2), kg.transpose(1, 2), vg.transpose(1, 2)
        if gqa_via == "enable_gqa":
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=True)
        if gqa_via == "repeat_interleave":
            kt, vt = kt.repeat_interleave(h // hk, dim=1), vt.repeat_interleave(h // hk, dim=1)
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

    gqa = "none" if hk == h else "enable_gqa"
    with sdpa_kernel([backend]), torch.set_grad_enabled(bwd):
        try:
            o = forward(gqa)
        except (TypeError, RuntimeError):
            if gqa == "none":
                raise
            gqa = "repeat_interleave"
            o = forward(gqa)
        outputs = {"o": o.transpose(1, 2)}
        if bwd:
            dout = load(np, torch, dtype, os.path.join(path, "dout.npy"))
            o.backward(dout.transpose(1, 2))
            outputs.update({"dq": qg.grad, "dk": kg.grad, "dv": vg.grad})
    for key, t in outputs.items():
        save(np, os.path.join(path, f"{name}_{key}.npy"), t)
    return gqa, list(outputs), (s, d, h, hk)


def main():
    try:
        args, cases = parse_args()
    except SystemExit as e:  # argparse: --help (0), or a bad argument (its message is on stderr)
        if not e.code:
            return 0
        emit({"error": "bad arguments (see the usage message above)"})
        return 2
    except ValueError as e:
        emit({"error": f"bad --case: {e}"})
        return 2
    env = start(args.dtype, "from cplab-bench's inputs, (1,s,h,d) passed as (1,h,s,d) views; O and dQ/dK/dV "
                            "written as float32 (no LSE: not in SDPA's public API)", need_numpy=True)
    if env is None:
        return 2
    np, torch, F, SDPBackend, sdpa_kernel, dtype = (env["np"], env["torch"], env["F"], env["SDPBackend"],
                                                     env["sdpa_kernel"], env["dtype"])
    for case in cases:
        for name in BACKENDS:
            backend = getattr(SDPBackend, "FLASH_ATTENTION" if name == "flash" else "CUDNN_ATTENTION", None)
            head = {"case": case[0], "backend": name, "causal": case[1]}
            try:
                if backend is None:
                    raise RuntimeError(f"this torch has no SDPBackend for {name}")
                gqa, outputs, (s, d, h, hk) = run_case(np, torch, F, sdpa_kernel, backend, name, case, args, dtype)
                emit({**head, "s": s, "d": d, "h": h, "hk": hk, "gqa": gqa, "outputs": outputs})
            except Exception as e:  # noqa: BLE001 (a backend refusing a shape is a result, not a crash)
                msg = str(e).strip().splitlines()
                emit({**head, "error": f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]})
            finally:
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
