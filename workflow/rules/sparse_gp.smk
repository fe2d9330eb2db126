# Sparse GPs (section 6, Figure 2(2) and Figure 4; F.1, H.3): per problem (gp1d, msd) its data ->
# its truth (the exact GP on gp1d) -> one job per method and seed -> the table, the curves and
# Figure 4; Figure 2's panel (2) from the same runs (rule figure2, logistic.smk). msd's data is the stand-in `make-data sparse_gp` writes unless the config names
# the real `msd` (prepared by the datasets rules from an offline mirror). Skipped without a
# sparse_gp section in the config.
import sys

if "sparse_gp" not in config:
    print("note: the sparse_gp experiment is skipped: the config has no sparse_gp section", file=sys.stderr)
else:
    SGP = config["sparse_gp"]
    SGP_DIR = f"{RESULTS}/sparse_gp"
    SGP_PROBLEMS = list(SGP["problems"])
    SGP_METHODS = list(SGP["methods"])
    SGP_SEEDS = list(range(SGP["seeds"]))
    CURVES_SGP = f"{RESULTS}/figures/curves_sparse_gp.png"
    TABLE_SGP = f"{RESULTS}/figures/table_sparse_gp.md"
    FIGURE4 = f"{RESULTS}/figures/figure4.png"
    # the tuning protocol (workflow/experiments/sparse_gp_tuning.py): a label with a grid in
    # sparse_gp.tuning.grids is tuned on each problem's training rows and runs again as `<label>_tuned`
    SGP_GRIDS = list(SGP.get("tuning", {}).get("grids", {}))
    SGP_RUNS = expand(f"{SGP_DIR}/{{problem}}/runs/{{method}}/seed{{seed}}.npz", problem=SGP_PROBLEMS,
                      method=SGP_METHODS + tuned_labels("sparse_gp"), seed=SGP_SEEDS)
    COST_INPUTS["sparse_gp"] = {"runs": SGP_RUNS}
    FIGURE2_INPUTS.update(sparse_gp_data=expand(f"{SGP_DIR}/{{problem}}/truth.npz", problem=SGP_PROBLEMS),
                          sparse_gp_runs=SGP_RUNS)
    TUNING_RESULTS["sparse_gp"] = expand(f"{TUNINGS}/sparse_gp/{{problem}}/tuning/{{method}}.json", problem=SGP_PROBLEMS,
                                         method=SGP_GRIDS)

    ALL_TARGETS.extend([CURVES_SGP, TABLE_SGP] + ([FIGURE4] if "gp1d" in SGP_PROBLEMS else []))

    def _sgp_data(wildcards):
        return f"{RESULTS}/data/{SGP['problems'][wildcards.problem]['dataset']}.npz"

    rule sparse_gp_standin:
        input:
            config=ancient(RESOLVED_CONFIG),
        output:
            f"{RESULTS}/data/msd-standin.npz",
        log:
            f"{RESULTS}/logs/sparse_gp/standin.log",
        threads: 1
        resources:
            **job_resources("sparse_gp_standin", config),
        params:
            settings=lambda wildcards: job_settings("sparse_gp", None),
        shell:
            PMD_BENCH + " --config {input.config} make-data sparse_gp --out {output} > {log} 2>&1"

    rule sparse_gp_truth:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=_sgp_data,
            store=TRACKING_STORE,
        output:
            f"{SGP_DIR}/{{problem}}/truth.npz",
        wildcard_constraints:
            problem="|".join(SGP_PROBLEMS),
        log:
            f"{RESULTS}/logs/sparse_gp/{{problem}}-truth.log",
        threads: 1
        resources:
            **job_resources("sparse_gp_truth", config),
        params:
            settings=lambda wildcards: job_settings("sparse_gp", None),
        shell:
            PMD_BENCH + " --config {input.config} reference sparse_gp --problem {wildcards.problem}"
            + " --data {input.data} --out {output} > {log} 2>&1"

    rule sparse_gp_run:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=_sgp_data,
            truth=f"{SGP_DIR}/{{problem}}/truth.npz",
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("sparse_gp", wildcards.method),
        output:
            f"{SGP_DIR}/{{problem}}/runs/{{method}}/seed{{seed}}.npz",
        wildcard_constraints:
            problem="|".join(SGP_PROBLEMS),
            method="|".join(SGP_METHODS),
            seed=r"\d+",
        log:
            f"{RESULTS}/logs/sparse_gp/{{problem}}-{{method}}-seed{{seed}}.log",
        threads: 1
        resources:
            **job_resources("sparse_gp_run", config),
        params:
            settings=lambda wildcards: job_settings("sparse_gp", wildcards.method),
        shell:
            PMD_BENCH + " --config {input.config} run sparse_gp --problem {wildcards.problem}"
            + " --method {wildcards.method} --seed {wildcards.seed} --data {input.data}"
            + " --reference {input.truth} --out {output} > {log} 2>&1"

    rule sparse_gp_tune:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=_sgp_data,
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("sparse_gp", wildcards.method),
        output:
            f"{SGP_DIR}/{{problem}}/tuning/{{method}}.json",
        wildcard_constraints:
            problem="|".join(SGP_PROBLEMS),
            method="|".join(SGP_GRIDS) or "(?!)",
        log:
            f"{RESULTS}/logs/sparse_gp/{{problem}}-tune-{{method}}.log",
        threads: 1
        resources:
            **job_resources("sparse_gp_tune", config),
        params:
            settings=lambda wildcards: job_settings("sparse_gp", wildcards.method, tuning=True),
        shell:
            PMD_BENCH + " --config {input.config} tune sparse_gp --problem {wildcards.problem}"
            + " --method {wildcards.method} --data {input.data} --out {output} > {log} 2>&1"

    rule sparse_gp_run_tuned:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=_sgp_data,
            truth=f"{SGP_DIR}/{{problem}}/truth.npz",
            store=TRACKING_STORE,
            tuning=f"{TUNINGS}/sparse_gp/{{problem}}/tuning/{{method}}.json",
            method_file=lambda wildcards: method_files("sparse_gp", wildcards.method),
        output:
            f"{SGP_DIR}/{{problem}}/runs/{{method}}_tuned/seed{{seed}}.npz",
        wildcard_constraints:
            problem="|".join(SGP_PROBLEMS),
            method="|".join(SGP_GRIDS) or "(?!)",
            seed=r"\d+",
        log:
            f"{RESULTS}/logs/sparse_gp/{{problem}}-{{method}}_tuned-seed{{seed}}.log",
        threads: 1
        resources:
            **job_resources("sparse_gp_run_tuned", config),
        params:
            settings=lambda wildcards: job_settings("sparse_gp", wildcards.method),
        shell:
            PMD_BENCH + " --config {input.config} run sparse_gp --problem {wildcards.problem}"
            + " --method {wildcards.method} --seed {wildcards.seed} --data {input.data}"
            + " --reference {input.truth} --tuning {input.tuning} --out {output} > {log} 2>&1"

    rule sparse_gp_figures:
        input:
            truths=expand(f"{SGP_DIR}/{{problem}}/truth.npz", problem=SGP_PROBLEMS),
            runs=SGP_RUNS,
        output:
            figure=CURVES_SGP,
            summary=f"{RESULTS}/figures/curves_sparse_gp.json",
            table=TABLE_SGP,
        log:
            f"{RESULTS}/logs/sparse_gp/figures.log",
        threads: 1
        resources:
            **job_resources("sparse_gp_figures", config),
        shell:
            PMD_BENCH + " report sparse-gp --data {input.truths} --runs {input.runs} --out {output.table}"
            + " --figure {output.figure} > {log} 2>&1"

    rule sparse_gp_figure4:
        input:
            truth=f"{SGP_DIR}/gp1d/truth.npz",
            runs=expand(f"{SGP_DIR}/gp1d/runs/{SGP['figure4_method']}/seed{{seed}}.npz", seed=SGP_SEEDS),
        output:
            FIGURE4,
        log:
            f"{RESULTS}/logs/sparse_gp/figure4.log",
        threads: 1
        resources:
            **job_resources("sparse_gp_figure4", config),
        shell:
            PMD_BENCH + " report figure4 --data {input.truth} --runs {input.runs} --out {output} > {log} 2>&1"
