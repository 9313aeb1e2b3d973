"""submitit, unchanged: submit, a job array with map_array, and cancel."""

import time

import submitit

from conftest import sacct_state


def add(a, b):
    return a + b


def square(x):
    return x * x


def slow():
    time.sleep(300)


def executor(tmp_path):
    ex = submitit.AutoExecutor(folder=tmp_path / "logs", cluster="slurm")
    ex.update_parameters(timeout_min=5, slurm_partition="debug", cpus_per_task=1, mem_gb=1)
    return ex


def wait_for(pred, timeout=60):
    deadline = time.time() + timeout
    while not pred() and time.time() < deadline:
        time.sleep(0.2)
    return pred()


def test_submit_and_result(drover, tmp_path):
    job = executor(tmp_path).submit(add, 2, 3)
    assert job.result() == 5
    assert wait_for(lambda: sacct_state(job.job_id) == "COMPLETED")


def test_map_array(drover, tmp_path):
    ex = executor(tmp_path)
    ex.update_parameters(slurm_array_parallelism=2)
    jobs = ex.map_array(square, range(5))
    assert [j.result() for j in jobs] == [0, 1, 4, 9, 16]
    assert len({j.job_id.split("_")[0] for j in jobs}) == 1


def test_cancel(drover, tmp_path):
    job = executor(tmp_path).submit(slow)
    assert wait_for(lambda: sacct_state(job.job_id) == "RUNNING")
    job.cancel()
    assert wait_for(lambda: sacct_state(job.job_id).startswith("CANCELLED"))
    # submitit sees the end through sacct, as on Slurm.
    assert wait_for(lambda: job.done(force_check=True))
    assert job.state.startswith("CANCELLED")
