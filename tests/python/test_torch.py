"""Distributed PyTorch, unchanged: the torchrun recipe of docs/recipes/torchrun.sbatch
runs a gloo all-reduce over the two nodes of a job (CPU only; the nodes are on
loopback, so the master address is given as 127.0.0.1 instead of the first node's
name, which the recipe would look up with `scontrol show hostnames`)."""

import pathlib
import subprocess
import time

from conftest import ROOT, sacct_state

ALL_REDUCE = """
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
value = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(value)
print(f"rank={dist.get_rank()} world={dist.get_world_size()} sum={value.item():g}", flush=True)
dist.destroy_process_group()
"""


def test_torchrun_recipe_all_reduces_over_two_nodes(drover, tmp_path):
    (tmp_path / "all_reduce.py").write_text(ALL_REDUCE)
    recipe = ROOT / "docs" / "recipes" / "torchrun.sbatch"
    r = subprocess.run(
        ["sbatch", "--parsable", "--export=ALL,MASTER_ADDR=127.0.0.1,MASTER_PORT=29731",
         "-o", "torch-%j.out", str(recipe), "all_reduce.py"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    job_id = r.stdout.strip()
    end = time.time() + 300
    while sacct_state(job_id) not in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
        assert time.time() < end, "the torchrun job did not end"
        time.sleep(0.5)
    out = (tmp_path / f"torch-{job_id}.out").read_text()
    assert sacct_state(job_id) == "COMPLETED", out[-4000:]
    ranks = sorted(line for line in out.splitlines() if line.startswith("rank="))
    assert ranks == ["rank=0 world=2 sum=3", "rank=1 world=2 sum=3"], out[-4000:]
    # The recipe's master is the job's first node when not given.
    hostnames = subprocess.run(["scontrol", "show", "hostnames", "node[1-2]"],
                               capture_output=True, text=True, check=True)
    assert hostnames.stdout.split()[0] == "node1"
