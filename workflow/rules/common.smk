# Shared definitions: every rule's outputs that `rule all` collects, and the resolved config that
# the `pmd-bench` CLI reads (the Snakefile's embedded default, workflow/config/default.yaml, when no
# --configfile is given).
import json
import shlex
import sys

import yaml

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


def tuned_labels(experiment):
    """The `<label>_tuned` method labels of an experiment's tuning grids (none without a tuning section)."""
    return [f"{label}_tuned" for label in config[experiment].get("tuning", {}).get("grids", {})]

# The CLI through this interpreter: no PATH set-up needed (`pmd-bench` is the same entry point).
PMD_BENCH = f"{shlex.quote(sys.executable)} -m pmd_bench.workflow.cli"
RESOLVED_CONFIG = f"{RESULTS}/config.yaml"

# Written from the config (and the store below, tracking.smk): on the submitting host under a cluster
# profile. Every rule's threads and resources: workflow/resources.py (docs/cluster.md).
localrules:
    resolved_config,
    tracking_store,


# One XLA thread per job: Snakemake's --cores decides the parallelism, not each JAX process. Jobs
# share JAX's persistent compilation cache (.jax-cache/ at the repository root unless
# JAX_COMPILATION_CACHE_DIR says otherwise): the seeds and configs of one method compile the same steps.
shell.prefix("export XLA_FLAGS='--xla_cpu_multi_thread_eigen=false'; "
             f"export JAX_COMPILATION_CACHE_DIR=${{{{JAX_COMPILATION_CACHE_DIR:-{workflow.basedir}/.jax-cache}}}}; "
             "export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=${{JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS:-0.5}}; ")


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
