# Shared definitions: every rule's outputs that `rule all` collects, and the resolved config that
# the `pmd-bench` CLI reads (the Snakefile's embedded default, workflow/config/default.yaml, when no
# --configfile is given).
import json
import shlex
import sys

import yaml

from pmd_bench.workflow.config import seeds_in_one_job
from pmd_bench.workflow.resources import batch_resources, job_resources

ALL_TARGETS = []
# experiment -> the inputs of its cost-to-threshold report (cost.smk): its run files and, where the
# criterion needs one, the data file holding the floor; each experiment's rule file registers its own.
COST_INPUTS = {}
# experiment -> where its tuned runs read from (tuning.smk): its folder, data file and the run's other
# inputs; a method label with a grid in `<experiment>.tuning.grids` also runs as `<label>_tuned`.
TUNED = {}
# experiment -> its tuning results (`pmd-bench tune`'s JSONs) that tuning.smk's report shows; each
# experiment's rule file registers its own when its config section has tuning grids.
TUNING_RESULTS = {}
# The results folder whose `<experiment>/tuning/` files the `<label>_tuned` runs and the tuning
# reports read: this campaign's own (its tune jobs write them) or, with `tunings_from`, another
# campaign's (the equal-work campaign takes the tuning campaign's choices and tunes nothing itself).
TUNINGS = config.get("tunings_from") or RESULTS


def tuned_labels(experiment):
    """The `<label>_tuned` method labels of an experiment's tuning grids (none without a tuning section)."""
    return [f"{label}_tuned" for label in config[experiment].get("tuning", {}).get("grids", {})]

# The CLI through this interpreter: no PATH set-up needed (`pmd-bench` is the same entry point).
PMD_BENCH = f"{shlex.quote(sys.executable)} -m pmd_bench.workflow.cli"
RESOLVED_CONFIG = f"{RESULTS}/config.yaml"

# The jobs that run methods and make their data read the resolved config, but it reaches Snakemake's
# rerun decision only through each job's params `settings` (job_settings): the experiment's
# settings and the job's own method entry. So adding, removing or changing one method reruns that
# method's jobs (and the tables that read them), never the others'; a changed experiment setting
# reruns the experiment. Both files are `ancient`: once they exist, a rewritten config or tracking
# store sends no job again, and run files restored from archive/ (which have no Snakemake records)
# count as done (`pmd-bench archive restore` and `add-method` make both before Snakemake starts; an
# ancient input that Snakemake itself creates still counts as updated).
TRACKING_STORE = ancient(f"{RESULTS}/.tracking-store")


def job_settings(experiment, label=None, tuning=False):
    """What a job of `experiment` reads from the config, as JSON for its params: the experiment's
    section less its methods, tuning grids and lists of targets (custom models, whose files are
    their jobs' inputs; posteriordb's posteriors: one job serves one), and, for a method's job,
    the method's entry (a `<label>_tuned` job's label is its base label) and, for its tune job
    (`tuning`), its grid: a run reads no grid (a tuned run reads its tune job's file), so a
    widened grid reruns the tuning and the tuned runs, not the default runs."""
    section = config.get(experiment) or {}
    settings = {k: v for k, v in section.items() if k not in ("methods", "tuning", "models", "posteriors")}
    if label is not None:
        settings["entry"] = (section.get("methods") or {}).get(label)
        settings["grid"] = section.get("tuning", {}).get("grids", {}).get(label) if tuning else None
    return json.dumps(settings, sort_keys=True, default=str)


def method_files(experiment, label):
    """The Python file of a method given as `file.py:Class` (an input of its jobs: editing it reruns
    them), else none."""
    from pmd_bench.workflow.config import is_file_spec

    name = ((config.get(experiment) or {}).get("methods") or {}).get(label, {}).get("method", "")
    return [name.rpartition(":")[0]] if isinstance(name, str) and is_file_spec(name) else []


# Written from the config (and the store below, tracking.smk): on the submitting host under a cluster
# profile. Every rule's threads and resources: workflow/resources.py (docs/cluster.md).
localrules:
    resolved_config,
    tracking_store,


# One XLA thread per job: Snakemake's --cores decides the parallelism, not each JAX process. Jobs
# share JAX's persistent compilation cache (.jax-cache/ at the repository root unless
# JAX_COMPILATION_CACHE_DIR says otherwise): the seeds and configs of one method compile the same
# steps, and every job of an experiment the same small programs (its scorer's pieces, the runner's
# plan, the posteriors' draws), so every program is kept, however quickly it compiled (measured on
# the mixture: a job after three others took 4.8 s instead of 7.5 s with only programs of 0.5 s and
# more kept). JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS set in the environment overrides this.
shell.prefix("export XLA_FLAGS='--xla_cpu_multi_thread_eigen=false'; "
             f"export JAX_COMPILATION_CACHE_DIR=${{{{JAX_COMPILATION_CACHE_DIR:-{workflow.basedir}/.jax-cache}}}}; "
             "export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=${{JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS:-0}}; ")


rule resolved_config:
    output:
        RESOLVED_CONFIG,
    params:
        config=json.dumps(config, sort_keys=True),
    threads: 1
    resources:
        **job_resources("resolved_config", config),
    run:
        import os, tempfile

        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(output[0]) or ".")
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(json.loads(params.config), f, sort_keys=False)
        os.replace(tmp, output[0])
