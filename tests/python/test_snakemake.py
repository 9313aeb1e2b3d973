"""Snakemake with its Slurm executor plugin, unchanged: a two-rule workflow."""

import subprocess
import sys
import pathlib

SNAKEFILE = """
rule all:
    input: "result.txt"

rule make:
    output: "numbers.txt"
    resources: runtime=5, mem_mb=200
    shell: "seq 1 10 > {output}"

rule total:
    input: "numbers.txt"
    output: "result.txt"
    resources: runtime=5, mem_mb=200
    shell: "awk '{{s+=$1}} END {{print s}}' {input} > {output}"
"""


def test_workflow(drover, tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    snakemake = pathlib.Path(sys.executable).parent / "snakemake"
    r = subprocess.run(
        [str(snakemake), "--executor", "slurm", "--jobs", "2", "--latency-wait", "5",
         "--default-resources", "slurm_partition=debug", "--slurm-init-seconds-before-status-checks", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert (tmp_path / "result.txt").read_text().strip() == "55"
