# Methods against posteriordb's reference posteriors (workflow/experiments/posteriordb.py): each
# posterior's floor (its last reference chain scored against the others) -> one job per method,
# posterior and seed -> the table and heat map. The data come only from an offline mirror: without
# one holding posteriordb/ (config datasets.offline_mirror or PMD_BENCH_DATA_MIRROR), or without a
# posteriordb section in the config, the experiment is skipped with a note.
import re
import sys

from pmd_bench.workflow.config import posteriordb_skip_reason

_PDB_SKIP = posteriordb_skip_reason(config)

if _PDB_SKIP:
    print(f"note: the posteriordb experiment is skipped: {_PDB_SKIP}", file=sys.stderr)

    # Asked for by name without a mirror, the table fails with the reason (not "no rule to produce").
    rule posteriordb_unavailable:
        output:
            f"{RESULTS}/figures/table_posteriordb.md",
            f"{RESULTS}/figures/posteriordb.png",
            f"{RESULTS}/figures/cost_posteriordb.md",
            f"{RESULTS}/figures/cost_posteriordb.png",
        localrule: True
        threads: 1
        resources:
            **job_resources("posteriordb_unavailable", config),
        params:
            reason=_PDB_SKIP,
        shell:
            "echo 'the posteriordb experiment cannot run: {params.reason}' >&2; exit 1"
else:
    PDB_DIR = f"{RESULTS}/posteriordb"
    PDB_POSTERIORS = list(config["posteriordb"]["posteriors"])
    PDB_METHODS = list(config["posteriordb"]["methods"])
    # the tuning protocol (workflow/tuning.py): a label with a grid in posteriordb.tuning.grids is tuned
    # on each posterior's data and its seeds run again as `<label>_tuned` (a non-i.i.d. posterior is
    # one datum and is not tuned: its tuned run is the default one, the reason recorded)
    PDB_GRIDS = list(config["posteriordb"].get("tuning", {}).get("grids", {}))
    PDB_SEEDS = list(range(config["posteriordb"]["seeds"]))
    TABLE_POSTERIORDB = f"{RESULTS}/figures/table_posteriordb.md"
    FIGURE_POSTERIORDB = f"{RESULTS}/figures/posteriordb.png"
    PDB_RUNS = expand(
        f"{PDB_DIR}/runs/{{posterior}}/{{method}}/seed{{seed}}.npz",
        posterior=PDB_POSTERIORS,
        method=PDB_METHODS + [f"{label}_tuned" for label in PDB_GRIDS],
        seed=PDB_SEEDS,
    )
    COST_INPUTS["posteriordb"] = {"runs": PDB_RUNS}
    TUNING_RESULTS["posteriordb"] = expand(f"{TUNINGS}/posteriordb/tuning/{{posterior}}/{{method}}.json",
                                           posterior=PDB_POSTERIORS, method=PDB_GRIDS)

    ALL_TARGETS.extend([TABLE_POSTERIORDB, FIGURE_POSTERIORDB])

    rule posteriordb_floor:
        input:
            config=ancient(RESOLVED_CONFIG),
        output:
            f"{PDB_DIR}/floors/{{posterior}}.json",
        wildcard_constraints:
            posterior="|".join(map(re.escape, PDB_POSTERIORS)),
        log:
            f"{RESULTS}/logs/posteriordb/floor-{{posterior}}.log",
        threads: 1
        resources:
            **job_resources("posteriordb_floor", config),
        params:
            settings=lambda wildcards: job_settings("posteriordb", None),
        shell:
            PMD_BENCH + " --config {input.config} floor posteriordb --posterior {wildcards.posterior}"
            + " --out {output} > {log} 2>&1"

    rule posteriordb_tune:
        input:
            config=ancient(RESOLVED_CONFIG),
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("posteriordb", wildcards.method),
        output:
            f"{PDB_DIR}/tuning/{{posterior}}/{{method}}.json",
        wildcard_constraints:
            posterior="|".join(map(re.escape, PDB_POSTERIORS)),
            method="|".join(map(re.escape, PDB_GRIDS)) or "(?!)",
        log:
            f"{RESULTS}/logs/posteriordb/tune-{{posterior}}-{{method}}.log",
        threads: 1
        resources:
            **job_resources("posteriordb_tune", config),
        params:
            settings=lambda wildcards: job_settings("posteriordb", wildcards.method, tuning=True),
        shell:
            PMD_BENCH + " --config {input.config} tune posteriordb --posterior {wildcards.posterior}"
            + " --method {wildcards.method} --out {output} > {log} 2>&1"

    if seeds_in_one_job(config["posteriordb"]):
        # every seed of a method on a posterior in one job, one after another (the data, reference and
        # method built once; workflow/experiments/posteriordb.py run_seeds), the same files as a job per seed
        rule posteriordb_run_batched:
            input:
                config=ancient(RESOLVED_CONFIG),
                store=TRACKING_STORE,
                method_file=lambda wildcards: method_files("posteriordb", wildcards.method),
            output:
                expand(f"{PDB_DIR}/runs/{{{{posterior}}}}/{{{{method}}}}/seed{{seed}}.npz", seed=PDB_SEEDS),
            wildcard_constraints:
                posterior="|".join(map(re.escape, PDB_POSTERIORS)),
                method="|".join(map(re.escape, PDB_METHODS)),
            log:
                f"{RESULTS}/logs/posteriordb/{{posterior}}-{{method}}-batched.log",
            threads: 1
            resources:
                **batch_resources("posteriordb_run", config, len(PDB_SEEDS)),
            params:
                settings=lambda wildcards: job_settings("posteriordb", wildcards.method),
                seeds=" ".join(str(s) for s in PDB_SEEDS),
            shell:
                PMD_BENCH + " --config {input.config} run posteriordb --method {wildcards.method}"
                + " --posterior {wildcards.posterior} --seed {params.seeds} --out {output} > {log} 2>&1"

        rule posteriordb_run_tuned_batched:
            input:
                config=ancient(RESOLVED_CONFIG),
                store=TRACKING_STORE,
                tuning=f"{TUNINGS}/posteriordb/tuning/{{posterior}}/{{method}}.json",
                method_file=lambda wildcards: method_files("posteriordb", wildcards.method),
            output:
                expand(f"{PDB_DIR}/runs/{{{{posterior}}}}/{{{{method}}}}_tuned/seed{{seed}}.npz", seed=PDB_SEEDS),
            wildcard_constraints:
                posterior="|".join(map(re.escape, PDB_POSTERIORS)),
                method="|".join(map(re.escape, PDB_GRIDS)) or "(?!)",
            log:
                f"{RESULTS}/logs/posteriordb/{{posterior}}-{{method}}_tuned-batched.log",
            threads: 1
            resources:
                **batch_resources("posteriordb_run_tuned", config, len(PDB_SEEDS)),
            params:
                settings=lambda wildcards: job_settings("posteriordb", wildcards.method),
                seeds=" ".join(str(s) for s in PDB_SEEDS),
            shell:
                PMD_BENCH + " --config {input.config} run posteriordb --method {wildcards.method}"
                + " --posterior {wildcards.posterior} --seed {params.seeds} --tuning {input.tuning} --out {output}"
                + " > {log} 2>&1"

    else:
        rule posteriordb_run:
            input:
                config=ancient(RESOLVED_CONFIG),
                store=TRACKING_STORE,
                method_file=lambda wildcards: method_files("posteriordb", wildcards.method),
            output:
                f"{PDB_DIR}/runs/{{posterior}}/{{method}}/seed{{seed}}.npz",
            wildcard_constraints:
                posterior="|".join(map(re.escape, PDB_POSTERIORS)),
                method="|".join(map(re.escape, PDB_METHODS)),
                seed=r"\d+",
            log:
                f"{RESULTS}/logs/posteriordb/{{posterior}}-{{method}}-seed{{seed}}.log",
            threads: 1
            resources:
                **job_resources("posteriordb_run", config),
            params:
                settings=lambda wildcards: job_settings("posteriordb", wildcards.method),
            shell:
                PMD_BENCH + " --config {input.config} run posteriordb --method {wildcards.method}"
                + " --posterior {wildcards.posterior} --seed {wildcards.seed} --out {output} > {log} 2>&1"

        rule posteriordb_run_tuned:
            input:
                config=ancient(RESOLVED_CONFIG),
                store=TRACKING_STORE,
                tuning=f"{TUNINGS}/posteriordb/tuning/{{posterior}}/{{method}}.json",
                method_file=lambda wildcards: method_files("posteriordb", wildcards.method),
            output:
                f"{PDB_DIR}/runs/{{posterior}}/{{method}}_tuned/seed{{seed}}.npz",
            wildcard_constraints:
                posterior="|".join(map(re.escape, PDB_POSTERIORS)),
                method="|".join(map(re.escape, PDB_GRIDS)) or "(?!)",
                seed=r"\d+",
            log:
                f"{RESULTS}/logs/posteriordb/{{posterior}}-{{method}}_tuned-seed{{seed}}.log",
            threads: 1
            resources:
                **job_resources("posteriordb_run_tuned", config),
            params:
                settings=lambda wildcards: job_settings("posteriordb", wildcards.method),
            shell:
                PMD_BENCH + " --config {input.config} run posteriordb --method {wildcards.method}"
                + " --posterior {wildcards.posterior} --seed {wildcards.seed} --tuning {input.tuning} --out {output}"
                + " > {log} 2>&1"

    rule posteriordb_report:
        input:
            floors=expand(f"{PDB_DIR}/floors/{{posterior}}.json", posterior=PDB_POSTERIORS),
            runs=PDB_RUNS,
        output:
            table=TABLE_POSTERIORDB,
            summary=f"{RESULTS}/figures/table_posteriordb.json",
            figure=FIGURE_POSTERIORDB,
        log:
            f"{RESULTS}/logs/posteriordb_report.log",
        threads: 1
        resources:
            **job_resources("posteriordb_report", config),
        shell:
            PMD_BENCH + " report posteriordb --data {input.floors} --runs {input.runs} --out {output.table}"
            + " --figure {output.figure} > {log} 2>&1"
