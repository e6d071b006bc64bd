"""The GIL is released while native code runs: Python threads call concurrently and
every caller gets its own result."""

import threading

import numpy as np

import anvil as av


def test_concurrent_calls():
    w = av.Tensor(np.sin(np.arange(256.0)).reshape(16, 16))
    f = av.NumericalFunction("threaded", lambda x: (w @ (w @ x).tanh()).sum(), (av.Arg(16),))
    inputs = [np.full(16, k * 0.01) for k in range(64)]
    want = [f(x) for x in inputs]
    errors = []

    def worker(offset):
        for k in range(offset, 64, 4):
            for _ in range(20):
                if f(inputs[k]) != want[k]:
                    errors.append(k)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


DAEMONS_AT_EXIT = """
import sys, threading, time
import numpy as np
import anvil as av

n = int(sys.argv[1])
f = av.NumericalFunction("daemon_%d" % n, lambda x: (x.sin().exp().cos() * x).sum(), (av.Arg(n),))
x = np.linspace(0.0, 1.0, n)
f(x)

def worker():
    while True:
        f(x)

for _ in range(4):
    threading.Thread(target=worker, daemon=True).start()
time.sleep(0.2)
if sys.argv[2] == "sys.exit":
    sys.exit(0)
"""


def test_daemon_threads_inside_native_calls_do_not_crash_the_exit():
    # Threads still in native code when the interpreter finalizes must not take the process
    # down (it used to die with SIGSEGV or SIGABRT in nearly every run).
    import subprocess
    import sys

    for n, how in [(200_000, "end"), (4, "end"), (200_000, "sys.exit")] * 2:
        done = subprocess.run([sys.executable, "-c", DAEMONS_AT_EXIT, str(n), how], capture_output=True, timeout=120)
        assert done.returncode == 0, (n, how, done.returncode, done.stderr.decode()[-2000:])
