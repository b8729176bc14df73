"""The fixtures of the model tests: ``client``, a Dask LocalCluster of two worker processes."""
import pytest


@pytest.fixture(scope="module")
def client():
    """A Dask client on two worker processes of one thread each (for a test module)."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (cvbayes[distributed])")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                                       scheduler_port=0)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
