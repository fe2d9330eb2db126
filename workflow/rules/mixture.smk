# The mixture experiment (section 6, Figures 1 and 3): data -> one job per method and seed -> figures.
MIX_DIR = f"{RESULTS}/mixture"
MIX_METHODS = list(config["mixture"]["methods"])
MIX_SEEDS = list(range(config["mixture"]["seeds"]))
FIGURE1 = f"{RESULTS}/figures/figure1.png"
TUNED["mixture"] = {"dir": MIX_DIR, "data": f"{MIX_DIR}/data.npz", "extra": {}}
MIX_RUNS = expand(f"{MIX_DIR}/runs/{{method}}/seed{{seed}}.npz", method=MIX_METHODS + tuned_labels("mixture"),
                  seed=MIX_SEEDS)
COST_INPUTS["mixture"] = {"data": f"{MIX_DIR}/data.npz", "runs": MIX_RUNS}

ALL_TARGETS.append(FIGURE1)


rule mixture_data:
    input:
        config=ancient(RESOLVED_CONFIG),
    output:
        f"{MIX_DIR}/data.npz",
    log:
        f"{RESULTS}/logs/mixture_data.log",
    threads: 1
    resources:
        **job_resources("mixture_data", config),
    params:
        settings=lambda wildcards: job_settings("mixture", None),
    shell:
        PMD_BENCH + " --config {input.config} make-data mixture --out {output} > {log} 2>&1"


if seeds_in_one_job(config["mixture"]):
    # every seed of a method in one job (one after another, or with batch_seeds one vectorised
    # program: pmd.run_batched), the same files as one job per seed
    rule mixture_run_batched:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=f"{MIX_DIR}/data.npz",
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("mixture", wildcards.method),
        output:
            expand(f"{MIX_DIR}/runs/{{{{method}}}}/seed{{seed}}.npz", seed=MIX_SEEDS),
        wildcard_constraints:
            method="|".join(MIX_METHODS),
        log:
            f"{RESULTS}/logs/mixture/{{method}}-batched.log",
        threads: 1
        resources:
            **batch_resources("mixture_run", config, len(MIX_SEEDS)),
        params:
            settings=lambda wildcards: job_settings("mixture", wildcards.method),
            seeds=" ".join(str(s) for s in MIX_SEEDS),
        shell:
            PMD_BENCH + " --config {input.config} run mixture --method {wildcards.method} --seed {params.seeds}"
            + " --data {input.data} --out {output} > {log} 2>&1"

else:
    rule mixture_run:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=f"{MIX_DIR}/data.npz",
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("mixture", wildcards.method),
        output:
            f"{MIX_DIR}/runs/{{method}}/seed{{seed}}.npz",
        wildcard_constraints:
            method="|".join(MIX_METHODS),
            seed=r"\d+",
        log:
            f"{RESULTS}/logs/mixture/{{method}}-seed{{seed}}.log",
        threads: 1
        resources:
            **job_resources("mixture_run", config),
        params:
            settings=lambda wildcards: job_settings("mixture", wildcards.method),
        shell:
            PMD_BENCH + " --config {input.config} run mixture --method {wildcards.method} --seed {wildcards.seed}"
            + " --data {input.data} --out {output} > {log} 2>&1"


rule mixture_figures:
    input:
        data=f"{MIX_DIR}/data.npz",
        runs=MIX_RUNS,
    output:
        figure1=FIGURE1,
        figure3=f"{RESULTS}/figures/figure3.png",
        summary=f"{RESULTS}/figures/figure1.json",
        table=f"{RESULTS}/figures/table_mixture.md",
    log:
        f"{RESULTS}/logs/mixture_figures.log",
    threads: 1
    resources:
        **job_resources("mixture_figures", config),
    shell:
        PMD_BENCH + " report figure1 --data {input.data} --runs {input.runs} --out {output.figure1} > {log} 2>&1"
