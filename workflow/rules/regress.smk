# `pmd-bench regress`'s baseline (workflow/regress.py): every method of the config at seeds
# 0..regress.seeds-1 (the run rules' seed wildcard), then the baseline JSON written atomically.
# Only for a config with a regress section (ci.yaml); not part of `rule all`.
if "regress" in config:
    from pmd_bench.workflow.regress import baseline_inputs

    rule regress_baseline:
        input:
            config=RESOLVED_CONFIG,
            runs=baseline_inputs(config, RESULTS, config["regress"]["seeds"]),
        output:
            config["regress"]["baseline"],
        log:
            f"{RESULTS}/logs/regress_baseline.log",
        threads: 1
        resources:
            **job_resources("regress_baseline", config),
        shell:
            PMD_BENCH + " --config {input.config} regress --write-baseline --results " + RESULTS + " > {log} 2>&1"
