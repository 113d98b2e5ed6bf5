"""cplab.testing: assertions for a test suite (pytest or unittest) that checks a CP implementation.

What it is: assert_cp_equivalent(inputs, outputs, **spec), which runs cplab.check and, when the
outputs are not equivalent to the reference, raises AssertionError whose message is the report's
verdict and diagnosis (the text `cplab check` prints), so a failing test says what is wrong.
What it is not: a tolerance of its own (the check's per-dtype tolerances, or tolerance= /
precision=, decide).
"""
from ._check import check


def assert_cp_equivalent(inputs, outputs, **spec):
    """Assert that `outputs` (global dict, or a list of per-rank dicts in local order) are what the
    CP configuration `spec` must give on `inputs`; returns the CheckReport when they are.

    Example (pytest)::

        def test_my_ring():
            inputs = {"q": q, "k": k, "v": v, "do": do}
            outputs = my_ring_attention(q, k, v, do, cp=4)   # {"o": ..., "lse": ..., "dq": ...}
            cplab.testing.assert_cp_equivalent(inputs, outputs, mode="p2p", cp=4, layout="zigzag", causal=True)
    """
    report = check(inputs, outputs, **spec)
    if not report.equivalent:
        raise AssertionError("CP outputs are not equivalent to the reference:\n" + str(report))
    return report
