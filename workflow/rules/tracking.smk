# The MLflow store is created once, before any run opens it (concurrent first opens of a fresh
# SQLite store corrupt its schema migration). Each invocation gets its own folder in
# PMD_BENCH_WORKFLOW_RUN (inherited by every job): each experiment's runs become children of one
# parent run per invocation, closed at the end with the config and the experiment's figures and
# tables as artifacts (workflow/tracking.py). Set the variable yourself to group several invocations.
import os
import time

os.environ.setdefault(
    "PMD_BENCH_WORKFLOW_RUN", os.path.abspath(f"{RESULTS}/logs/workflow-runs/{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
)


rule tracking_store:
    input:
        ancient(RESOLVED_CONFIG),
    output:
        f"{RESULTS}/.tracking-store",
    log:
        f"{RESULTS}/logs/tracking_store.log",
    threads: 1
    resources:
        **job_resources("tracking_store", config),
    shell:
        PMD_BENCH + " --config {input} init-store --marker {output} > {log} 2>&1"


def _close_workflow_runs(status):
    """Close this invocation's parent runs; each experiment's artifacts are the outputs under
    {RESULTS}/figures/ of its rules (named <experiment>_*)."""
    from pmd_bench.workflow.cli import EXPERIMENTS
    from pmd_bench.workflow.tracking import finish_workflow_runs

    outputs = {
        name: [f for r in workflow.rules if r.name.startswith(name + "_") for f in r.output
               if f.startswith(f"{RESULTS}/figures/")]
        for name in EXPERIMENTS
    }
    finish_workflow_runs(os.environ["PMD_BENCH_WORKFLOW_RUN"], RESOLVED_CONFIG, outputs, status)


onsuccess:
    _close_workflow_runs("FINISHED")


onerror:
    _close_workflow_runs("FAILED")
