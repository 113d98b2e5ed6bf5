#!/usr/bin/python3
# npy_numpy_check.py: proves cplab's .npy reader/writer interoperates with real NumPy.
#
# What it is: run by ctest as
#     /usr/bin/python3 tests/npy_numpy_check.py <path-to-npy_roundtrip> <scratch-dir>
# NumPy writes float32/float64 arrays of several shapes (format 1.0, 2.0 and 3.0, plus a strided
# view), npy_roundtrip reads each and writes 2*x, and NumPy loads the result and checks dtype, shape
# and values exactly, plus the 64-byte data alignment. Files our side must reject (Fortran order,
# int32, big-endian) must make npy_roundtrip exit 2 with the matching message.
# Exit 0 on success, 1 with a message per failure otherwise.
# What it is not: a test of the error paths in detail (tests/test_npy.cpp does that). It needs the
# Debian numpy, so run it with /usr/bin/python3, not a pyenv python3 without numpy.
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("npy_numpy_check: numpy is not importable; run with /usr/bin/python3 (Debian python3-numpy)")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: npy_numpy_check.py <path-to-npy_roundtrip> <scratch-dir>")
    exe, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    failures = []

    def run(name, arr, version=None):
        src = os.path.join(scratch, name + ".in.npy")
        dst = os.path.join(scratch, name + ".out.npy")
        if os.path.exists(dst):
            os.remove(dst)
        with open(src, "wb") as f:
            np.lib.format.write_array(f, arr, version=version, allow_pickle=False)
        p = subprocess.run([exe, src, dst], capture_output=True, text=True)
        return src, dst, p

    def good(name, arr, version=None):
        _, dst, p = run(name, arr, version)
        if p.returncode != 0:
            failures.append(f"{name}: npy_roundtrip exited {p.returncode}: {p.stderr.strip()}")
            return
        try:
            with open(dst, "rb") as f:
                major, minor = np.lib.format.read_magic(f)
                if (major, minor) != (1, 0):
                    failures.append(f"{name}: our file has format version {major}.{minor}, want 1.0")
                np.lib.format.read_array_header_1_0(f)
                if f.tell() % 64 != 0:
                    failures.append(f"{name}: our data starts at byte {f.tell()}, not a multiple of 64")
            got = np.load(dst, allow_pickle=False)
            c = np.array(arr, order="C")  # not ascontiguousarray: it turns 0-d into 1-d
            want = np.asarray(c + c)  # == 2*x exactly, in x's dtype (2 * a 0-d f4 array gives f8)
            if got.dtype != want.dtype or got.dtype.byteorder not in ("<", "="):
                failures.append(f"{name}: dtype {got.dtype.str}, want {want.dtype.str}")
            elif got.shape != want.shape:
                failures.append(f"{name}: shape {got.shape}, want {want.shape}")
            elif not np.array_equal(got, want, equal_nan=True):
                failures.append(f"{name}: values differ (max abs diff {np.nanmax(np.abs(got - want))})")
        except Exception as e:  # a file NumPy cannot parse is a failure, not a crash
            failures.append(f"{name}: NumPy cannot load our file: {type(e).__name__}: {e}")

    def bad(name, arr, expect_in_msg):
        src, dst, p = run(name, arr)
        msg = p.stderr.strip()
        if p.returncode != 2:
            failures.append(f"{name}: npy_roundtrip exited {p.returncode}, want 2 (must reject); stderr: {msg}")
        elif not msg.startswith("npy_roundtrip: error: " + src + ": ") or expect_in_msg not in msg:
            failures.append(f"{name}: unexpected message {msg!r}, want one naming {src} and {expect_in_msg!r}")
        if os.path.exists(dst):
            failures.append(f"{name}: npy_roundtrip wrote {dst} for an input it must reject")

    rng = np.random.default_rng(20240607)
    shapes = [(), (1,), (7,), (3, 4), (2, 3, 5), (2, 1, 3, 2), (0,), (2, 0, 3)]
    count = 0
    for dt in (np.float32, np.float64):
        tag = np.dtype(dt).str[1:]
        for shape in shapes:
            arr = np.asarray(rng.standard_normal(shape), dtype=dt)
            good(f"{tag}_{'x'.join(map(str, shape)) or 'scalar'}", arr)
            count += 1
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(dt).tiny, np.finfo(dt).max / 4], dtype=dt)
        good(f"{tag}_special", special)
        big = rng.standard_normal((64, 33)).astype(dt)
        good(f"{tag}_strided_view", big[::3, 1::2])  # neither C- nor F-contiguous: NumPy saves C order
        for version in ((2, 0), (3, 0)):
            good(f"{tag}_v{version[0]}", rng.standard_normal((4, 5)).astype(dt), version)
        count += 4
    good("f8_native_equals", np.arange(6, dtype="=f8").reshape(2, 3))
    count += 1

    bad("f8_fortran", np.asfortranarray(rng.standard_normal((3, 4))), "fortran_order arrays are not supported")
    bad("i4", np.arange(12, dtype=np.int32).reshape(3, 4), "dtype '<i4' is not supported")
    bad("f8_big_endian", np.arange(5, dtype=">f8"), "big-endian dtype '>f8' is not supported")
    bad("f2_big_endian", np.arange(5, dtype=">f2"), "big-endian dtype '>f2' is not supported")
    bad("i2", np.arange(5, dtype="<i2"), "dtype '<i2' is not supported")
    count += 5

    # float16, and bfloat16 as ml_dtypes saves it ('<V2' bytes; numpy has no bfloat16): read exactly,
    # written back as float64 (2*x)
    def widened(name, arr, want):
        _, dst, p = run(name, arr)
        if p.returncode != 0:
            failures.append(f"{name}: npy_roundtrip exited {p.returncode}: {p.stderr.strip()}")
            return
        got = np.load(dst, allow_pickle=False)
        if got.dtype != np.float64 or got.shape != want.shape or not np.array_equal(got, 2 * want):
            failures.append(f"{name}: read back {got.dtype} {got.shape} {got.ravel()[:4]}, want 2 * {want.ravel()[:4]}")

    half = rng.standard_normal((3, 5)).astype(np.float16)
    widened("f2", half, half.astype(np.float64))
    f32 = rng.standard_normal((4, 3)).astype(np.float32)
    bits = f32.view(np.uint32)
    bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
    widened("bf16_V2", bf16.view("V2"), (bf16.astype(np.uint32) << 16).view(np.float32).astype(np.float64))
    count += 2

    if failures:
        for f in failures:
            print("npy_numpy_check: FAIL " + f, file=sys.stderr)
        print(f"npy_numpy_check: {len(failures)} failure(s) in {count} cases", file=sys.stderr)
        return 1
    print(f"npy_numpy_check: all {count} cases passed (numpy {np.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
