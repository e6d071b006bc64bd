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
