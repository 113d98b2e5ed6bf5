#!/usr/bin/env python3
"""sdpa_baseline.py: PyTorch SDPA timings, the baseline beside `cplab-bench attention`'s rows.

What it is: for each shape, times torch.nn.functional.scaled_dot_product_attention under
torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION]) (PyTorch's FA2 kernels) and, separately,
[SDPBackend.CUDNN_ATTENTION] (cuDNN's fused attention), forward and backward, with CUDA events:
--warmup untimed calls, then the mean over --iters timed calls.
  fwd: sdpa(q, k, v, is_causal=...) on inputs that do not require grad
  bwd: FlashAttention's benchmark_backward: the forward once with requires_grad, then each timed call
       is out.backward(dout, retain_graph=True) (grads reset to None first); the forward is NOT in it
Tensors: q (b, s, h, d), k and v (b, s, hk, d), created token-major (the memory order of cplab's
kernels) and handed to SDPA as (b, h, s, d) views (.transpose(1, 2)); uniform(-1, 1) in the dtype;
scale 1/sqrt(d); causal is top-left (PyTorch's is_causal, cplab's causal(0)). GQA (hk < h) uses
enable_gqa=True, or K/V repeated to h heads (repeat_interleave, outside the timing) where that fails.
FLOPs: FlashAttention's convention, 4*b*h*s^2*d forward, causal half, backward 2.5x.

Output, one JSON object per line on stdout:
  {"info": "..."}                                    first: torch version, device, conventions
  {"backend": "flash"|"cudnn", "pass": "fwd"|"bwd", "d", "s", "causal", "b", "h", "hk", "ms", "tflops"}
  {"backend", "pass", "d", "s", "causal", ..., "error": "..."}   that backend could not run that shape
  {"error": "..."}, exit status 2                    no torch, no CUDA device for torch, bad arguments
Shapes: one --shape b,h,hk,s,d,causal each (what cplab-bench passes), or, standalone, the same
FA2/FA3 setup as cplab-bench: --tokens 16384 --hidden 2048 --head-dim 64,128 --seq 1024,...,32768
--causal both (b = tokens/seq, 1 when seq > tokens; h = hidden/d).
What it is not: a correctness check (cplab-bench checks its own kernels against the CPU reference),
or FlashAttention 3 (only what this PyTorch build ships).
"""
import argparse
import sys

from sdpa_common import emit, start


def flops(b, h, s, d, causal, direction):
    f = 4.0 * b * h * s * s * d / (2 if causal else 1)
    return f if direction == "fwd" else 2.5 * f


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--pass", dest="which", default="both", choices=["fwd", "bwd", "both"])
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--shape", action="append", default=[], help="b,h,hk,s,d,causal(0|1); repeatable")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--head-dim", default="64,128")
    p.add_argument("--seq", default="1024,2048,4096,8192,16384,32768")
    p.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    return p.parse_args()


def shapes_of(args):
    if args.shape:
        out = []
        for text in args.shape:
            b, h, hk, s, d, c = int_list(text)
            out.append((b, h, hk, s, d, bool(c)))
        return out
    causal = [c for c in (False, True) if args.causal == "both" or (args.causal == "yes") == c]
    return [(1 if s > args.tokens else args.tokens // s, args.hidden // d, args.hidden // d, s, d, c)
            for d in int_list(args.head_dim) for c in causal for s in int_list(args.seq)]


def time_ms(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / iters


def run_shape(torch, F, sdpa_kernel, backend, shape, args, dtype):
    """{pass: ms} for one backend and shape; raises on any failure."""
    b, h, hk, s, d, causal = shape
    dev = "cuda"

    def rand(heads):  # token-major (b, s, heads, d), seen as (b, heads, s, d)
        return (torch.rand(b, s, heads, d, device=dev, dtype=dtype) * 2 - 1).transpose(1, 2)

    q, k, v = rand(h), rand(hk), rand(hk)
    gqa = {}
    if hk != h:
        gqa = {"enable_gqa": True}
        try:
            with sdpa_kernel([backend]):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)
        except (TypeError, RuntimeError):
            k = k.repeat_interleave(h // hk, dim=1)
            v = v.repeat_interleave(h // hk, dim=1)
            gqa = {}
    out = {}
    with sdpa_kernel([backend]):
        if args.which in ("fwd", "both"):
            with torch.no_grad():
                out["fwd"] = time_ms(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa),
                                     args.warmup, args.iters)
        if args.which in ("bwd", "both"):
            qg, kg, vg = (x.detach().requires_grad_(True) for x in (q, k, v))
            o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, **gqa)
            dout = torch.randn_like(o)

            def backward():
                qg.grad = kg.grad = vg.grad = None
                o.backward(dout, retain_graph=True)

            out["bwd"] = time_ms(torch, backward, args.warmup, args.iters)
    return out, ("repeat_interleave" if hk != h and not gqa else ("enable_gqa" if gqa else "none"))


def main():
    try:
        args = parse_args()
        shapes = shapes_of(args)
    except SystemExit as e:  # argparse: --help (0), or a bad argument (its message is on stderr)
        if not e.code:
            return 0
        emit({"error": "bad arguments (see the usage message above)"})
        return 2
    except ValueError as e:
        emit({"error": f"bad --shape (expected b,h,hk,s,d,causal): {e}"})
        return 2
    env = start(args.dtype, "q/k/v token-major (b,s,h,d) passed as (b,h,s,d) views; "
                            "bwd = out.backward(dout, retain_graph=True), forward not included")
    if env is None:
        return 2
    torch, F, SDPBackend, sdpa_kernel, dtype = env["torch"], env["F"], env["SDPBackend"], env["sdpa_kernel"], env["dtype"]
    backends = [("flash", getattr(SDPBackend, "FLASH_ATTENTION", None)),
                ("cudnn", getattr(SDPBackend, "CUDNN_ATTENTION", None))]
    passes = ["fwd", "bwd"] if args.which == "both" else [args.which]
    for shape in shapes:
        b, h, hk, s, d, causal = shape
        base = {"d": d, "s": s, "causal": causal, "b": b, "h": h, "hk": hk}
        for name, backend in backends:
            try:
                if backend is None:
                    raise RuntimeError(f"this torch has no SDPBackend for {name}")
                times, gqa = run_shape(torch, F, sdpa_kernel, backend, shape, args, dtype)
                for p in passes:
                    emit({"backend": name, "pass": p, **base, "ms": times[p],
                          "tflops": flops(b, h, s, d, causal, p) / (times[p] * 1e-3) / 1e12, "gqa": gqa})
            except Exception as e:  # noqa: BLE001 (a backend refusing a shape is a result, not a crash)
                msg = str(e).strip().splitlines()
                for p in passes:
                    emit({"backend": name, "pass": p, **base,
                          "error": f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]})
            finally:
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
