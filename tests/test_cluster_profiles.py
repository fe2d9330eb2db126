"""The cluster profiles (docs/cluster.md): a dry run under workflow/profiles/slurm lists
every job of the paper config with its threads, mem_mb and runtime, without SLURM installed, and
the resources follow the config's sizes (workflow/resources.py)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pmd_bench.workflow import resources
from pmd_bench.workflow.repetitions import BATCHABLE

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
RULE = re.compile(r"^(?:local)?rule (\w+):\n(.*?)(?=^\S)", re.S | re.M)

pytest.importorskip("snakemake_executor_plugin_slurm", reason="the cluster extra: pip install -e '.[cluster]'")


# SLURM's client commands (Debian's slurm-client), hidden from the dry runs
SLURM_COMMANDS = {"sacct", "sacctmgr", "salloc", "sattach", "sbatch", "sbcast", "scancel", "scontrol", "scrontab",
                  "sdiag", "sinfo", "sprio", "squeue", "sreport", "srun", "sshare", "sstat", "strigger"}


def path_without_slurm(folder: Path) -> str:
    """``PATH`` with every directory that holds ``sbatch`` replaced by a folder under ``folder`` of
    links to its other entries: the machine's tools stay (the SLURM plugin calls ``which``), SLURM's
    commands go, also where SLURM is installed (workflow/profiles/slurm/local/start.sh installs it)."""
    dirs = []
    for i, d in enumerate(os.environ["PATH"].split(os.pathsep)):
        if Path(d, "sbatch").exists():
            shadow = folder / f"path-{i}"
            if not shadow.exists():
                shadow.mkdir(parents=True)
                for entry in Path(d).iterdir():
                    if entry.name not in SLURM_COMMANDS:
                        (shadow / entry.name).symlink_to(entry)
            d = str(shadow)
        dirs.append(d)
    return os.pathsep.join(dirs)


def dry_run(profile: str, config: str) -> list[tuple[str, dict[str, str]]]:
    """``(rule, resources)`` of every job ``snakemake --profile <profile> -n`` lists (rule all left
    out), with no SLURM command on ``PATH``."""
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": "http://mlflow.invalid:5000",
        "PMD_BENCH_DATA_DIR": "/tmp/pmd-bench-shared-data",
        "PATH": path_without_slurm(Path(config).parent),
    }
    assert shutil.which("sbatch", path=env["PATH"]) is None
    done = subprocess.run(
        [str(SNAKEMAKE), "--profile", f"workflow/profiles/{profile}", "-n", "--configfile", config],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    jobs = []
    for name, body in RULE.findall(done.stdout + "\n."):
        if name == "all":
            continue
        line = re.search(r"^\s+resources: (.*)$", body, re.M)
        assert line, f"job of rule {name} lists no resources:\n{body}"
        listed = dict(item.split("=", 1) for item in line.group(1).split(", "))
        # Snakemake prints a job's threads only when there are more than 1
        threads = re.search(r"^\s+threads: (\d+)$", body, re.M)
        jobs.append((name, {**listed, "threads": threads.group(1) if threads else "1"}))
    return jobs


def fresh(config: str, folder: Path, batch_seeds: bool | None = None) -> str:
    """``config`` with its results in ``folder`` (nothing built there: a dry run lists every job,
    whatever this checkout's ``results/`` holds) and, if given, ``batch_seeds`` set in every
    experiment that can batch its seeds."""
    cfg = yaml.safe_load((ROOT / config).read_text())
    cfg["results_dir"] = str(folder / "results")
    if batch_seeds is not None:
        for experiment in BATCHABLE:
            cfg[experiment]["batch_seeds"] = batch_seeds
    path = folder / f"{Path(config).stem}-{len(list(folder.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.fixture(scope="module")
def paper_jobs(tmp_path_factory):
    return dry_run("slurm", fresh("workflow/config/paper.yaml", tmp_path_factory.mktemp("paper")))


@pytest.mark.workflow
def test_every_paper_job_lists_threads_memory_and_runtime(paper_jobs):
    rules = {name for name, _ in paper_jobs}
    assert {"mixture_run", "logistic_run", "sparse_gp_run", "lda_run", "lda_grid_run"} <= rules
    assert len(paper_jobs) > 400
    for name, listed in paper_jobs:
        assert int(listed["threads"]) == 1, name
        assert int(listed["mem_mb"]) >= resources.PROCESS_MB, name
        assert int(listed["runtime"]) >= resources.MIN_RUNTIME_MIN, name
        assert listed["slurm_partition"] == "CHANGE_ME", name


def test_every_rule_declares_threads_and_resources():
    """A rule left to Snakemake's defaults would be listed without a runtime: each declares both."""
    for path in sorted((ROOT / "workflow/rules").glob("*.smk")):
        text = path.read_text()
        blocks = re.split(r"^\s*rule\b", text, flags=re.M)[1:]
        assert blocks, path
        for block in blocks:
            assert "threads:" in block and ("**job_resources(" in block or "**batch_resources(" in block), \
                (path.name, block[:80])


def test_paper_runs_ask_more_than_the_default_configs(paper_jobs, tmp_path):
    default = dry_run("slurm", fresh("workflow/config/default.yaml", tmp_path))

    def largest(jobs, rule, key):  # a job per seed, or per method with its seeds in one job
        return max(int(listed[key]) for name, listed in jobs if name in (rule, f"{rule}_batched"))

    for rule in ("mixture_run", "logistic_run", "sparse_gp_run"):
        assert largest(paper_jobs, rule, "runtime") > largest(default, rule, "runtime"), rule
    for rule in ("logistic_run", "sparse_gp_run"):
        assert largest(paper_jobs, rule, "mem_mb") > largest(default, rule, "mem_mb"), rule


def test_a_sparse_gp_method_with_moves_asks_for_its_kept_kernel():
    """``pmd_move`` keeps one chain's kernel against the training rows (``N × M`` float64,
    pmd.models.sparse_gp.DataKernel) and its slices' scratch: on the H.3.2 stand-in (463,715 rows,
    M = 1,024: 3,623 MiB a kernel) its job asks 1.15 kernels more memory than ``pmd_harmonic``'s, the
    same method without moves, times the safety factor (integer MB: ceil)."""
    config = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
    config["sparse_gp"]["problems"]["msd"]["dataset"] = "msd-standin"
    kernel_mb = 463715 * 1024 * 8 / 2**20
    asked = {label: resources.estimate("sparse_gp_run", config, {"problem": "msd", "method": label})["mem_mb"]
             for label in ("pmd_move", "pmd_harmonic")}
    assert abs(asked["pmd_move"] - asked["pmd_harmonic"] - resources.MEMORY_SAFETY * 1.15 * kernel_mb) <= 1


def test_estimate_scales_from_the_anchor():
    """At the anchor's own work and size a job asks the measurement times the safety factors."""
    config = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
    anchor = resources.ANCHORS["mixture_run"]
    job = resources.estimate("mixture_run", config, {"method": "smc"})  # the rate's anchor: 1,500 × 500 steps
    seconds = resources.RUNTIME_SAFETY * (anchor.fixed_s + 744)
    assert job["runtime"] == -(-seconds // 60)
    assert job["mem_mb"] == -(-resources.MEMORY_SAFETY * anchor.peak_mb // 1)
    twice = {**config, "mixture": {**config["mixture"], "num_data": 2000}}
    assert resources.estimate("mixture_run", twice, {"method": "smc"})["runtime"] > job["runtime"]


def test_unknown_names_are_reported():
    config = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
    with pytest.raises(KeyError, match="rule 'nope'"):
        resources.job_resources("nope", config)
    with pytest.raises(KeyError, match="method 'nope'"):
        resources.estimate("mixture_run", config, {"method": "nope"})
    with pytest.raises(KeyError, match="dataset 'nope'"):
        resources.dataset_rows(config, "nope")


@pytest.mark.workflow
def test_batched_seeds_are_one_job_per_method_asking_for_every_seed(tmp_path):
    cfg = yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())
    listings = {batch: dry_run("slurm", fresh("workflow/config/paper.yaml", tmp_path, batch_seeds=batch))
                for batch in (False, True)}
    for experiment in BATCHABLE:
        jobs = {batch: [listed for name, listed in listing if name.startswith(f"{experiment}_run")]
                for batch, listing in listings.items()}
        methods, seeds = len(cfg[experiment]["methods"]), cfg[experiment]["seeds"]
        assert (len(jobs[False]), len(jobs[True])) == (methods * seeds, methods), experiment
        # a batch asks for its seeds' time and memory side by side: the most a seed asks, times the seeds
        for key in ("runtime", "mem_mb"):
            assert max(int(b[key]) for b in jobs[True]) == seeds * max(int(s[key]) for s in jobs[False]), experiment
