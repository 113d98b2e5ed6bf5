"""Long calls release the GIL (another Python thread runs meanwhile) and Ctrl-C (SIGINT) stops them
with KeyboardInterrupt; the next call works. How soon it stopped is printed, not asserted (no clock
bound in a test)."""
import os
import signal
import threading
import time

import pytest

import cplab

LONG = dict(mode="p2p", cp=8, seq=4096, heads=8, kv_heads=8, head_dim=64, causal=True, backward=True)


def test_gil_released():
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.01)

    t = threading.Thread(target=tick)
    t.start()
    t0 = time.perf_counter()
    cplab.run(mode="p2p", cp=4, seq=2048, heads=4, kv_heads=4, head_dim=64, causal=True, backward=True)
    t1 = time.perf_counter()
    stop.set()
    t.join()
    during = [x for x in ticks if t0 < x < t1]
    print(f"the other thread ran {len(during)} times during the {t1 - t0:.2f} s call")
    assert len(during) > 0  # with the GIL held through the call it could not have run at all


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread only")
def test_ctrl_c_interrupts_run():
    def interrupt():
        time.sleep(0.3)
        interrupt.at = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler: a process started in the background by a shell script (CI) inherits
    # SIGINT ignored, and Python then installs no handler of its own
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t = threading.Thread(target=interrupt)
        t.start()
        with pytest.raises(KeyboardInterrupt):
            cplab.run(**LONG)
        stopped = time.perf_counter() - interrupt.at
        t.join()
    finally:
        signal.signal(signal.SIGINT, old)
    print(f"stopped {stopped * 1000:.0f} ms after SIGINT")
    r = cplab.run(mode="p2p", cp=2, seq=32, heads=2, kv_heads=1, head_dim=8)  # the flag was cleared
    assert r.errors["o"] < 1e-12
