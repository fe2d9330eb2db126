# The tuning protocol (workflow/tuning.py): for every method label with a grid in
# `<experiment>.tuning.grids`, one job chooses its settings on a validation split of the training
# data (`pmd-bench tune`), and its seeds run again with the choice as `<label>_tuned`, beside the
# default row in every table and figure of the experiment (the experiment's rule file puts those
# runs in its report's inputs and registers its data in TUNED). Included after the experiments.
# What was chosen, per experiment with tuning results (reports/tuning.py): figures/tuning_<experiment>.md.
for _experiment in TUNED:
    TUNING_RESULTS[_experiment] = expand(f"{TUNINGS}/{_experiment}/tuning/{{method}}.json",
                                         method=list(config[_experiment].get("tuning", {}).get("grids", {})))
TUNING_RESULTS = {experiment: files for experiment, files in TUNING_RESULTS.items() if files}
ALL_TARGETS.extend(f"{RESULTS}/figures/tuning_{experiment}.md" for experiment in TUNING_RESULTS)


rule tune:
    input:
        config=ancient(RESOLVED_CONFIG),
        data=lambda wildcards: TUNED[wildcards.experiment]["data"],
        store=TRACKING_STORE,
        method_file=lambda wildcards: method_files(wildcards.experiment, wildcards.method),
    output:
        f"{RESULTS}/{{experiment}}/tuning/{{method}}.json",
    wildcard_constraints:
        experiment="|".join(TUNED) or "(?!)",
    log:
        f"{RESULTS}/logs/{{experiment}}/tune-{{method}}.log",
    threads: 1
    resources:
        **job_resources("tune", config),
    params:
        settings=lambda wildcards: job_settings(wildcards.experiment, wildcards.method, tuning=True),
    shell:
        PMD_BENCH + " --config {input.config} tune {wildcards.experiment} --method {wildcards.method}"
        + " --data {input.data} --out {output} > {log} 2>&1"


rule run_tuned:
    input:
        unpack(lambda wildcards: {"config": ancient(RESOLVED_CONFIG), "data": TUNED[wildcards.experiment]["data"],
                                  "store": TRACKING_STORE,
                                  "tuning": f"{TUNINGS}/{wildcards.experiment}/tuning/{wildcards.method}.json",
                                  **TUNED[wildcards.experiment]["extra"]}),
    output:
        f"{RESULTS}/{{experiment}}/runs/{{method}}_tuned/seed{{seed}}.npz",
    wildcard_constraints:
        experiment="|".join(TUNED) or "(?!)",
        seed=r"\d+",
    log:
        f"{RESULTS}/logs/{{experiment}}/{{method}}_tuned-seed{{seed}}.log",
    threads: 1
    resources:
        **job_resources("run_tuned", config),
    params:
        settings=lambda wildcards: job_settings(wildcards.experiment, wildcards.method),
        extra=lambda wildcards, input: " ".join(f"--{k} {input[k]}" for k in TUNED[wildcards.experiment]["extra"]),
    shell:
        PMD_BENCH + " --config {input.config} run {wildcards.experiment} --method {wildcards.method}"
        + " --seed {wildcards.seed} --data {input.data} {params.extra} --tuning {input.tuning} --out {output}"
        + " > {log} 2>&1"


rule tuning_report:
    input:
        lambda wildcards: TUNING_RESULTS[wildcards.experiment],
    output:
        f"{RESULTS}/figures/tuning_{{experiment}}.md",
    wildcard_constraints:
        experiment="|".join(TUNING_RESULTS) or "(?!)",
    log:
        f"{RESULTS}/logs/tuning_{{experiment}}.log",
    threads: 1
    resources:
        **job_resources("tuning_report", config),
    shell:
        PMD_BENCH + " report tuning --experiment {wildcards.experiment} --tuning {input} --out {output} > {log} 2>&1"
