# The equal-cost view (issue 30, reports/cost.py): per experiment whose rule file registered its
# inputs in COST_INPUTS (the run files its own report reads, and the floor's data file where the
# criterion needs it), the cost-to-threshold table and figure. Included after the experiments.
COST_TARGETS = [f"{RESULTS}/figures/cost_{name}.{suffix}" for name in COST_INPUTS for suffix in ("md", "png")]

ALL_TARGETS.extend(COST_TARGETS)


rule cost_report:
    input:
        unpack(lambda wildcards: COST_INPUTS[wildcards.experiment]),
    output:
        table=f"{RESULTS}/figures/cost_{{experiment}}.md",
        figure=f"{RESULTS}/figures/cost_{{experiment}}.png",
    wildcard_constraints:
        experiment="|".join(COST_INPUTS) or "(?!)",
    log:
        f"{RESULTS}/logs/cost_{{experiment}}.log",
    threads: 1
    resources:
        **job_resources("cost_report", config),
    params:
        data=lambda wildcards, input: f"--data {input.data}" if "data" in input.keys() else "",
    shell:
        PMD_BENCH + " report cost --experiment {wildcards.experiment} {params.data} --runs {input.runs}"
        + " --out {output.table} --figure {output.figure} > {log} 2>&1"
