"""The examples run and say what they claim: the ring example's correct ring reads "equivalent",
its two bugs are named; the copyable pytest file passes."""
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def test_ring_attention_bug_example():
    p = subprocess.run([sys.executable, str(EXAMPLES / "ring_attention_bug.py")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l.startswith("--- ")]
    print("\n".join(lines))
    assert lines[0].endswith(": equivalent")
    assert "NOT equivalent" in lines[1] and ("summed" in lines[1] or "sum" in lines[1])
    assert "NOT equivalent" in lines[2] and "diagonal" in lines[2]


def test_copyable_pytest_file():
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLES / "test_my_cp.py")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "8 passed" in p.stdout
