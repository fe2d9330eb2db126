# Table 1 (section 5) measured on the conjugate model (workflow/experiments/table1.py, black_box.py):
# one job per method for the error-against-m rate and for the cost of a step, one probe of every
# registry method on every model -> table1.md, table1.json and table1.png. PMD's rate is Theorem 5's
# run (rate.smk). Each measurement is an MLflow run of <prefix>/table1. Skipped without a table1
# section in the config.
import sys

if "table1" not in config:
    print("note: Table 1 is skipped: the config has no table1 section", file=sys.stderr)
else:
    T1 = config["table1"]
    T1_DIR = f"{RESULTS}/table1"
    TABLE1 = f"{RESULTS}/figures/table1.md"

    ALL_TARGETS.append(TABLE1)

    rule table1_measure:
        input:
            config=ancient(RESOLVED_CONFIG),
            store=TRACKING_STORE,
        output:
            f"{T1_DIR}/{{part}}/{{method}}.json",
        wildcard_constraints:
            part="rate|cost",
        log:
            f"{RESULTS}/logs/table1/{{part}}-{{method}}.log",
        threads: 1
        resources:
            **job_resources("table1_measure", config),
        params:
            settings=lambda wildcards: job_settings("table1", None),
        shell:
            PMD_BENCH + " --config {input.config} table1 {wildcards.part} --method {wildcards.method}"
            + " --out {output} > {log} 2>&1"

    rule table1_black_box:
        input:
            config=ancient(RESOLVED_CONFIG),
            store=TRACKING_STORE,
        output:
            f"{T1_DIR}/black_box.json",
        log:
            f"{RESULTS}/logs/table1/black_box.log",
        threads: 1
        resources:
            **job_resources("table1_black_box", config),
        params:
            settings=lambda wildcards: job_settings("table1", None),
        shell:
            PMD_BENCH + " --config {input.config} table1 black-box --out {output} > {log} 2>&1"

    rule table1_render:
        input:
            config=RESOLVED_CONFIG,
            theorem5=RATE,
            rates=expand(f"{T1_DIR}/rate/{{method}}.json", method=list(T1["rate"]["methods"])),
            costs=expand(f"{T1_DIR}/cost/{{method}}.json", method=list(T1["cost"]["methods"])),
            black_box=f"{T1_DIR}/black_box.json",
        output:
            table=TABLE1,
            summary=f"{RESULTS}/figures/table1.json",
            figure=f"{RESULTS}/figures/table1.png",
        log:
            f"{RESULTS}/logs/table1/render.log",
        threads: 1
        resources:
            **job_resources("table1_render", config),
        shell:
            PMD_BENCH + " --config {input.config} table1 render --theorem5 {input.theorem5} --rates {input.rates}"
            + " --costs {input.costs} --black-box {input.black_box} --out {output.table} > {log} 2>&1"
