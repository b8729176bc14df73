"""What the tests of learning on shards share (beside conftest.py's ``client`` fixture): the objective
trajectory of a fit, a named shard folder used twice, the refusals of a model whose vb alone runs on shards, and
a worker that dies in the middle of a pass."""
import importlib
import os
import sys

import numpy as np
import pytest


def objectives(model):
    return np.array([record.objective for record in model.history_])


def fitted_twice_on(folder, fit):
    """``fit(folder)`` twice on the same shard folder; asserts the second wrote no file and returns both models."""
    first = fit(folder)
    saved = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    again = fit(folder)
    assert {path.name: path.stat().st_mtime_ns for path in folder.iterdir()} == saved     # not written again
    return first, again


def assert_shard_refusals(model_class, utterances, client):
    """A model whose vb alone runs on shards refuses cvi with a client, and shards or a shard folder without one."""
    with pytest.raises(ValueError, match="algorithm 'cvi' does not run on shards; client= takes vb"):
        model_class(algorithm="cvi", n_iter=1).fit(utterances, client=client)
    with pytest.raises(ValueError, match="does not run on shards"):
        model_class(algorithm="vb", n_iter=1).fit(utterances, n_shards=2)
    with pytest.raises(ValueError, match="shard_folder="):
        model_class(algorithm="vb", n_iter=1).fit(utterances, shard_folder="x")


def _install_fault(module_name, function_name, calls_before_exit):
    """On this worker, ``module_name.function_name`` exits the process on its call after ``calls_before_exit``."""
    module = importlib.import_module(module_name)
    original = getattr(module, function_name)
    calls = [0]

    def exiting(*args):
        calls[0] += 1
        if calls[0] > calls_before_exit:
            os._exit(1)
        return original(*args)

    setattr(module, function_name, exiting)


def kill_a_worker_during(client, module_name, function_name, calls_before_exit):
    """Make the first worker's process exit on its call ``calls_before_exit + 1`` of the shard task
    ``module_name.function_name``; returns the workers' process ids before."""
    cloudpickle = pytest.importorskip("cloudpickle")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # both workers up (on a loaded machine one may still be rejoining): the survivor must hold the tables
    client.wait_for_workers(2, timeout=60)
    pids = set(client.run(os.getpid).values())
    victim = sorted(client.scheduler_info()["workers"])[0]
    client.run(_install_fault, module_name, function_name, calls_before_exit, workers=[victim])
    return pids


def assert_one_worker_replaced(client, pids_before):
    """The victim's process is gone (its nanny started another)."""
    client.wait_for_workers(2, timeout=60)
    assert len(pids_before - set(client.run(os.getpid).values())) == 1
