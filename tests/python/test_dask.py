"""dask-jobqueue, unchanged: a SLURMCluster with two workers computing a sum."""

import subprocess
import time

from dask.distributed import Client
from dask_jobqueue import SLURMCluster


def test_two_workers_sum(drover, tmp_path):
    cluster = SLURMCluster(
        cores=1,
        memory="1GB",
        processes=1,
        queue="debug",
        walltime="00:10:00",
        interface="lo",
        log_directory=str(tmp_path),
    )
    try:
        cluster.scale(2)
        with Client(cluster) as client:
            client.wait_for_workers(2, timeout=120)
            futures = client.map(lambda x: x * 10, range(10))
            assert client.submit(sum, futures).result(timeout=60) == 450
            assert len(client.scheduler_info()["workers"]) == 2
            ids = [j for j in cluster.workers]
            assert ids
    finally:
        cluster.close()
    # Closing cancels the worker jobs.
    deadline = time.time() + 60
    while time.time() < deadline:
        out = subprocess.run(["squeue", "-h", "-n", "dask-worker", "-o", "%i"],
                             capture_output=True, text=True, check=True).stdout
        if not out.strip():
            break
        time.sleep(0.2)
    assert not out.strip(), out
