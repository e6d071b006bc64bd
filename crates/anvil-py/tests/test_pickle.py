"""Functions travel: Tensors, dtypes, Args and every kind of function pickle (no Python
source needed), copy, save/load, and run in worker processes and on a Dask cluster."""

import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import anvil as av

W = np.sin(np.arange(12.0)).reshape(3, 4)


def model():
    weights = av.Tensor(W)  # a captured constant travels with the function
    return av.NumericalFunction("model", lambda x, p: ((weights @ x).tanh() * p).sum(), (av.Arg(4), av.Arg(())))


def round_trips(obj):
    yield pickle.loads(pickle.dumps(obj))
    yield copy.deepcopy(obj)
    yield copy.copy(obj)


def test_the_language_pickles():
    for dtype in [av.dtypes.float64, av.dtypes.float32, av.dtypes.int32, av.dtypes.int64, av.dtypes.bool]:
        assert all(d == dtype for d in round_trips(dtype))
    arg = av.Arg((2, 3), dtype=av.dtypes.int32)
    assert all(a == arg for a in round_trips(arg))
    t = av.Tensor([[1.0, 2.0], [3.0, 4.0]]).exp()
    for back in round_trips(t):
        np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_functions_of_every_kind_pickle_without_their_source():
    f = model()
    x, p = np.linspace(-1.0, 1.0, 4), 0.7
    g = av.NumericalFunction("quad", lambda x: (x * x * x).sum(), (av.Arg(5),))
    band = av.NumericalFunction("band", lambda x: x.pad(((1, 0),))[:5] * x + x.exp(), (av.Arg(5),))
    pattern = av.SparseNumericalFunction("diag", lambda x: x * 2.0, (av.Arg(3),), (3, 3), 3, [0, 1, 2], [0, 1, 2, 3])
    cases = [
        (f, (x, p)),
        (av.ad.gradient(f), (x, p)),
        (av.ad.jacobian(g), (np.arange(5.0),)),
        (av.ad.hessian(g), (np.arange(5.0),)),
        (av.vmap(g, 3), (np.ones((3, 5)),)),
        (av.ad.spjacobian(band), (np.arange(5.0),)),
        (av.ad.sphessian(g), (np.arange(5.0),)),
        (pattern, (np.arange(3.0),)),
    ]
    for fn, args in cases:
        want = fn(*args)
        for back in round_trips(fn):
            assert type(back) is type(fn) and back.name == fn.name
            got = back(*args)
            if isinstance(fn, av.SparseNumericalFunction):
                assert back.nnz == fn.nnz and list(back.indices) == list(fn.indices)
                np.testing.assert_array_equal(got.toarray(), want.toarray())
            else:
                np.testing.assert_array_equal(got, want)


def test_save_and_load(tmp_path):
    f = model()
    f.save(tmp_path / "model.anvil")
    g = av.NumericalFunction.load(tmp_path / "model.anvil")
    assert g(np.ones(4), 2.0) == f(np.ones(4), 2.0)
    s = av.ad.spjacobian(av.NumericalFunction("e", lambda x: x.exp(), (av.Arg(3),)))
    s.save(str(tmp_path / "jac.anvil"))
    loaded = av.SparseNumericalFunction.load(tmp_path / "jac.anvil")
    assert isinstance(loaded, av.SparseNumericalFunction) and loaded.nnz == 3
    (tmp_path / "junk.anvil").write_bytes(b"\x00not a function")
    with pytest.raises(ValueError, match="cannot load the function"):
        av.NumericalFunction.load(tmp_path / "junk.anvil")


def evaluate(fn, params):
    return [float(fn(np.linspace(-1.0, 1.0, 4), p)) for p in params]


def test_a_function_runs_in_spawned_worker_processes():
    f = model()
    chunks = [[0.1 * i, 0.2 * i] for i in range(8)]
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(evaluate, [f] * len(chunks), chunks))
    assert results == [evaluate(f, c) for c in chunks]


def test_a_function_maps_over_parameters_on_a_dask_cluster():
    import distributed  # a dev requirement (scripts/setup.sh installs it)
    f = model()
    params = [0.05 * i for i in range(40)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            fn = client.scatter(f, broadcast=True)  # shipped once, compiled once per worker
            futures = client.map(lambda fn, p: float(fn(np.linspace(-1.0, 1.0, 4), p)), [fn] * len(params), params)
            results = client.gather(futures)
    assert results == evaluate(f, params)
