# Bayesian logistic regression (section 6, Figure 2(1); H.2): the prepared dataset -> NUTS reference
# (its own process: PyMC's JAX sampler turns on float64) -> one job per method and seed -> its table
# and curves. Figure 2 (rule figure2, here: the config always has a logistic section) takes its panel
# from the same runs, and those of the sparse-GP and LDA experiments where the config runs them.
LOG_DIR = f"{RESULTS}/logistic"
LOG_DATA = f"{RESULTS}/data/{config['logistic']['dataset']}.npz"
LOG_METHODS = list(config["logistic"]["methods"])
LOG_SEEDS = list(range(config["logistic"]["seeds"]))
FIGURE2 = f"{RESULTS}/figures/figure2.png"
CURVES_LOGISTIC = f"{RESULTS}/figures/curves_logistic.png"
TABLE_LOGISTIC = f"{RESULTS}/figures/table_logistic.md"
TUNED["logistic"] = {"dir": LOG_DIR, "data": LOG_DATA, "extra": {"reference": f"{LOG_DIR}/reference.npz"}}
LOG_RUNS = expand(f"{LOG_DIR}/runs/{{method}}/seed{{seed}}.npz", method=LOG_METHODS + tuned_labels("logistic"),
                  seed=LOG_SEEDS)
COST_INPUTS["logistic"] = {"runs": LOG_RUNS}
# Figure 2's inputs by experiment (sparse_gp.smk and lda.smk add theirs): `report figure2`'s flags
FIGURE2_INPUTS = {"data": f"{LOG_DIR}/reference.npz", "runs": LOG_RUNS}

ALL_TARGETS.extend([FIGURE2, CURVES_LOGISTIC, TABLE_LOGISTIC])


rule logistic_reference:
    input:
        config=ancient(RESOLVED_CONFIG),
        data=LOG_DATA,
        store=TRACKING_STORE,
    output:
        f"{LOG_DIR}/reference.npz",
    log:
        f"{RESULTS}/logs/logistic_reference.log",
    threads: 1
    resources:
        **job_resources("logistic_reference", config),
    params:
        settings=lambda wildcards: job_settings("logistic", None),
    shell:
        PMD_BENCH + " --config {input.config} reference logistic --data {input.data} --out {output} > {log} 2>&1"


if seeds_in_one_job(config["logistic"]):
    # every seed of a method in one job (one after another, or with batch_seeds one vectorised
    # program: pmd.run_batched), the same files as one job per seed
    rule logistic_run_batched:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=LOG_DATA,
            reference=f"{LOG_DIR}/reference.npz",
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("logistic", wildcards.method),
        output:
            expand(f"{LOG_DIR}/runs/{{{{method}}}}/seed{{seed}}.npz", seed=LOG_SEEDS),
        wildcard_constraints:
            method="|".join(LOG_METHODS),
        log:
            f"{RESULTS}/logs/logistic/{{method}}-batched.log",
        threads: 1
        resources:
            **batch_resources("logistic_run", config, len(LOG_SEEDS)),
        params:
            settings=lambda wildcards: job_settings("logistic", wildcards.method),
            seeds=" ".join(str(s) for s in LOG_SEEDS),
        shell:
            PMD_BENCH + " --config {input.config} run logistic --method {wildcards.method} --seed {params.seeds}"
            + " --data {input.data} --reference {input.reference} --out {output} > {log} 2>&1"

else:
    rule logistic_run:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=LOG_DATA,
            reference=f"{LOG_DIR}/reference.npz",
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("logistic", wildcards.method),
        output:
            f"{LOG_DIR}/runs/{{method}}/seed{{seed}}.npz",
        wildcard_constraints:
            method="|".join(LOG_METHODS),
            seed=r"\d+",
        log:
            f"{RESULTS}/logs/logistic/{{method}}-seed{{seed}}.log",
        threads: 1
        resources:
            **job_resources("logistic_run", config),
        params:
            settings=lambda wildcards: job_settings("logistic", wildcards.method),
        shell:
            PMD_BENCH + " --config {input.config} run logistic --method {wildcards.method} --seed {wildcards.seed}"
            + " --data {input.data} --reference {input.reference} --out {output} > {log} 2>&1"


rule logistic_figures:
    input:
        reference=f"{LOG_DIR}/reference.npz",
        runs=LOG_RUNS,
    output:
        table=TABLE_LOGISTIC,
        figure=CURVES_LOGISTIC,
        summary=f"{RESULTS}/figures/curves_logistic.json",
    log:
        f"{RESULTS}/logs/logistic_figures.log",
    threads: 1
    resources:
        **job_resources("logistic_figures", config),
    shell:
        PMD_BENCH + " report table-logistic --data {input.reference} --runs {input.runs} --out {output.table}"
        + " --figure {output.figure} > {log} 2>&1"


def _figure2_flags(wildcards, input):
    """`report figure2`'s flags, one per input of FIGURE2_INPUTS: --data, --runs, --sparse-gp-data, ..."""
    flags = []
    for key in input.keys():
        files = getattr(input, key)
        files = [files] if isinstance(files, str) else files
        flags.append(f"--{key.replace('_', '-')} " + " ".join(map(shlex.quote, files)))
    return " ".join(flags)


rule figure2:
    input:
        unpack(lambda wildcards: FIGURE2_INPUTS),
    output:
        figure=FIGURE2,
        summary=f"{RESULTS}/figures/figure2.json",
    log:
        f"{RESULTS}/logs/figure2.log",
    threads: 1
    resources:
        **job_resources("figure2", config),
    params:
        inputs=_figure2_flags,
    shell:
        PMD_BENCH + " report figure2 {params.inputs} --out {output.figure} > {log} 2>&1"
