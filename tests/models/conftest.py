"""The fixtures of the model tests: ``client``, a Dask LocalCluster of two worker processes for a test
module, and ``fresh_client``, one for a single test (a test that kills a worker: under load a nanny was
seen not to bring a worker back after the second kill in one cluster)."""
import pytest


def _two_workers():
    """A Dask client on two worker processes of one thread each, and its cluster closed after."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (cvbayes[distributed])")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                                       scheduler_port=0)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


client = pytest.fixture(scope="module", name="client")(_two_workers)
fresh_client = pytest.fixture(name="fresh_client")(_two_workers)
