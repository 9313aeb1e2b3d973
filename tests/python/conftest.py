"""A Drover cluster for the real Slurm clients: `drover up` in a temporary directory,
with its Slurm-named commands put first on PATH, as a user would after the README."""

import os
import pathlib
import random
import signal
import socket
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _bin_dir():
    d = pathlib.Path(os.environ.get("DROVER_BIN_DIR", ROOT / "target" / "debug"))
    assert (d / "drover").exists(), f"{d}/drover missing: run cargo build --workspace --bins"
    return d


def _free_base_port(count):
    """A port p such that p..p+count are all free on loopback."""
    for _ in range(200):
        base = random.randint(20000, 60000)
        ok = True
        for p in range(base, base + count + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free ports")


def _wait(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="session")
def drover(tmp_path_factory):
    root = tmp_path_factory.mktemp("drover")
    nodes = 2
    port = _free_base_port(nodes)
    log = open(root / "up.log", "w")
    proc = subprocess.Popen(
        [str(_bin_dir() / "drover"), "up", "--dir", str(root / "cluster"), "--port", str(port),
         "--nodes", str(nodes), "--cpus", "4", "--memory", "8G", "--gpus", "0"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    bin_dir = root / "cluster" / "bin"
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}:{old_path}"
    # Jobs inherit this environment (--export=ALL), so they can unpickle functions
    # defined in these test modules, as on a Slurm cluster with a shared filesystem.
    here = str(pathlib.Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))

    def idle_nodes():
        sinfo = bin_dir / "sinfo"
        if proc.poll() is not None or not sinfo.exists():
            return False
        r = subprocess.run([str(sinfo), "-h", "-N", "-o", "%T"], capture_output=True, text=True)
        return r.returncode == 0 and r.stdout.split().count("idle") == nodes

    try:
        _wait(idle_nodes, 60, "the local cluster")
    except AssertionError:
        os.killpg(proc.pid, signal.SIGKILL)
        os.environ["PATH"] = old_path
        raise AssertionError((root / "up.log").read_text())
    yield root / "cluster"
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    # Job processes run under their own supervisors: end any that are left.
    subprocess.run(["pkill", "-9", "-f", str(root)], check=False)
    os.environ["PATH"] = old_path


def sacct_state(job_id):
    r = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", str(job_id)],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()
