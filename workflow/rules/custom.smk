# Bring your own model (workflow/experiments/custom.py): every model file named in the config's
# custom.models -> its reference draws (the file's own, else NUTS behind the convergence gate) ->
# its floor -> one job per method and seed -> its own tables, heat map and cost-to-threshold table
# under results/custom/<name>/, and one table and cost report of all the models in figures/.
# One model's results alone:
#   snakemake --cores 2 results/custom/<name>/table.md results/custom/<name>/cost.md
# A model file is an input of its jobs: editing it reruns them.
import re

# a model set to null (an overlay config's way to leave out one of the base config's) is left out
CUSTOM_MODELS = {
    name: entry if isinstance(entry, str) else entry["file"]
    for name, entry in config.get("custom", {}).get("models", {}).items()
    if entry is not None
}

if CUSTOM_MODELS:
    CUSTOM_DIR = f"{RESULTS}/custom"
    CUSTOM_METHODS = list(config["custom"]["methods"])
    # the tuning protocol (workflow/tuning.py): a label with a grid in custom.tuning.grids is tuned on
    # each model's data and its seeds run again as `<label>_tuned` (a one-datum model is not tuned:
    # its tuned run is the default one, the reason recorded)
    CUSTOM_GRIDS = list(config["custom"].get("tuning", {}).get("grids", {}))
    CUSTOM_LABELS = CUSTOM_METHODS + [f"{label}_tuned" for label in CUSTOM_GRIDS]
    CUSTOM_SEEDS = list(range(config["custom"]["seeds"]))
    CUSTOM_NAME = "|".join(map(re.escape, CUSTOM_MODELS))
    TABLE_CUSTOM = f"{RESULTS}/figures/table_custom.md"
    FIGURE_CUSTOM = f"{RESULTS}/figures/custom.png"

    def custom_runs(name):
        return expand(f"{CUSTOM_DIR}/{name}/runs/{{method}}/seed{{seed}}.npz", method=CUSTOM_LABELS,
                      seed=CUSTOM_SEEDS)

    CUSTOM_RUNS = [run for name in CUSTOM_MODELS for run in custom_runs(name)]
    CUSTOM_FLOORS = [f"{CUSTOM_DIR}/{name}/floor.json" for name in CUSTOM_MODELS]
    COST_INPUTS["custom"] = {"runs": CUSTOM_RUNS}
    TUNING_RESULTS["custom"] = expand(f"{TUNINGS}/custom/{{name}}/tuning/{{method}}.json", name=list(CUSTOM_MODELS),
                                      method=CUSTOM_GRIDS)
    ALL_TARGETS.extend([TABLE_CUSTOM, FIGURE_CUSTOM])
    ALL_TARGETS.extend(f"{CUSTOM_DIR}/{name}/{what}" for name in CUSTOM_MODELS for what in ("table.md", "cost.md"))

    rule custom_reference:
        input:
            config=ancient(RESOLVED_CONFIG),
            model=lambda wildcards: CUSTOM_MODELS[wildcards.name],
        output:
            f"{CUSTOM_DIR}/{{name}}/reference.npz",
        wildcard_constraints:
            name=CUSTOM_NAME,
        log:
            f"{RESULTS}/logs/custom/{{name}}-reference.log",
        threads: 1
        resources:
            **job_resources("custom_reference", config),
        params:
            settings=lambda wildcards: job_settings("custom", None),
        shell:
            PMD_BENCH + " --config {input.config} reference custom --model {wildcards.name} --out {output} > {log} 2>&1"

    rule custom_floor:
        input:
            config=ancient(RESOLVED_CONFIG),
            model=lambda wildcards: CUSTOM_MODELS[wildcards.name],
            reference=f"{CUSTOM_DIR}/{{name}}/reference.npz",
        output:
            f"{CUSTOM_DIR}/{{name}}/floor.json",
        wildcard_constraints:
            name=CUSTOM_NAME,
        log:
            f"{RESULTS}/logs/custom/{{name}}-floor.log",
        threads: 1
        resources:
            **job_resources("custom_floor", config),
        params:
            settings=lambda wildcards: job_settings("custom", None),
        shell:
            PMD_BENCH + " --config {input.config} floor custom --model {wildcards.name}"
            + " --reference {input.reference} --out {output} > {log} 2>&1"

    rule custom_run:
        input:
            config=ancient(RESOLVED_CONFIG),
            store=TRACKING_STORE,
            model=lambda wildcards: CUSTOM_MODELS[wildcards.name],
            reference=f"{CUSTOM_DIR}/{{name}}/reference.npz",
            method_file=lambda wildcards: method_files("custom", wildcards.method),
        output:
            f"{CUSTOM_DIR}/{{name}}/runs/{{method}}/seed{{seed}}.npz",
        wildcard_constraints:
            name=CUSTOM_NAME,
            method="|".join(map(re.escape, CUSTOM_METHODS)),
            seed=r"\d+",
        log:
            f"{RESULTS}/logs/custom/{{name}}-{{method}}-seed{{seed}}.log",
        threads: 1
        resources:
            **job_resources("custom_run", config),
        params:
            settings=lambda wildcards: job_settings("custom", wildcards.method),
        shell:
            PMD_BENCH + " --config {input.config} run custom --model {wildcards.name} --method {wildcards.method}"
            + " --seed {wildcards.seed} --reference {input.reference} --out {output} > {log} 2>&1"

    rule custom_tune:
        input:
            config=ancient(RESOLVED_CONFIG),
            store=TRACKING_STORE,
            model=lambda wildcards: CUSTOM_MODELS[wildcards.name],
            method_file=lambda wildcards: method_files("custom", wildcards.method),
        output:
            f"{CUSTOM_DIR}/{{name}}/tuning/{{method}}.json",
        wildcard_constraints:
            name=CUSTOM_NAME,
            method="|".join(map(re.escape, CUSTOM_GRIDS)) or "(?!)",
        log:
            f"{RESULTS}/logs/custom/{{name}}-tune-{{method}}.log",
        threads: 1
        resources:
            **job_resources("custom_tune", config),
        params:
            settings=lambda wildcards: job_settings("custom", wildcards.method, tuning=True),
        shell:
            PMD_BENCH + " --config {input.config} tune custom --model {wildcards.name} --method {wildcards.method}"
            + " --out {output} > {log} 2>&1"

    rule custom_run_tuned:
        input:
            config=ancient(RESOLVED_CONFIG),
            store=TRACKING_STORE,
            model=lambda wildcards: CUSTOM_MODELS[wildcards.name],
            reference=f"{CUSTOM_DIR}/{{name}}/reference.npz",
            tuning=f"{TUNINGS}/custom/{{name}}/tuning/{{method}}.json",
            method_file=lambda wildcards: method_files("custom", wildcards.method),
        output:
            f"{CUSTOM_DIR}/{{name}}/runs/{{method}}_tuned/seed{{seed}}.npz",
        wildcard_constraints:
            name=CUSTOM_NAME,
            method="|".join(map(re.escape, CUSTOM_GRIDS)) or "(?!)",
            seed=r"\d+",
        log:
            f"{RESULTS}/logs/custom/{{name}}-{{method}}_tuned-seed{{seed}}.log",
        threads: 1
        resources:
            **job_resources("custom_run_tuned", config),
        params:
            settings=lambda wildcards: job_settings("custom", wildcards.method),
        shell:
            PMD_BENCH + " --config {input.config} run custom --model {wildcards.name} --method {wildcards.method}"
            + " --seed {wildcards.seed} --reference {input.reference} --tuning {input.tuning} --out {output}"
            + " > {log} 2>&1"

    rule custom_model_report:
        input:
            floor=f"{CUSTOM_DIR}/{{name}}/floor.json",
            runs=lambda wildcards: custom_runs(wildcards.name),
        output:
            table=f"{CUSTOM_DIR}/{{name}}/table.md",
            summary=f"{CUSTOM_DIR}/{{name}}/table.json",
            figure=f"{CUSTOM_DIR}/{{name}}/heatmap.png",
            cost=f"{CUSTOM_DIR}/{{name}}/cost.md",
            cost_figure=f"{CUSTOM_DIR}/{{name}}/cost.png",
        wildcard_constraints:
            name=CUSTOM_NAME,
        log:
            f"{RESULTS}/logs/custom/{{name}}-report.log",
        threads: 1
        resources:
            **job_resources("custom_model_report", config),
        shell:
            "(" + PMD_BENCH + " report custom --data {input.floor} --runs {input.runs} --out {output.table}"
            + " --figure {output.figure} && " + PMD_BENCH + " report cost --experiment custom --runs {input.runs}"
            + " --out {output.cost} --figure {output.cost_figure}) > {log} 2>&1"

    rule custom_report:
        input:
            floors=CUSTOM_FLOORS,
            runs=CUSTOM_RUNS,
        output:
            table=TABLE_CUSTOM,
            summary=f"{RESULTS}/figures/table_custom.json",
            figure=FIGURE_CUSTOM,
        log:
            f"{RESULTS}/logs/custom_report.log",
        threads: 1
        resources:
            **job_resources("custom_report", config),
        shell:
            PMD_BENCH + " report custom --data {input.floors} --runs {input.runs} --out {output.table}"
            + " --figure {output.figure} > {log} 2>&1"

    # Custom models named as posteriordb posteriors that the posteriordb experiment also runs (the
    # overlay workflow/config/custom_posteriordb.yaml): the two experiments' tables side by side.
    # Without a mirror the posteriordb experiment is skipped: asked for by name, the table fails with
    # the reason (as posteriordb_unavailable does), not with Snakemake's "no rule to produce".
    AGREEMENT = f"{RESULTS}/figures/custom_agreement.md"
    CUSTOM_SHARED = [name for name in CUSTOM_MODELS if name in config.get("posteriordb", {}).get("posteriors", [])]
    if CUSTOM_SHARED and _PDB_SKIP:

        rule custom_agreement_unavailable:
            output:
                AGREEMENT,
            localrule: True
            threads: 1
            resources:
                **job_resources("custom_agreement_unavailable", config),
            params:
                reason=_PDB_SKIP,
            shell:
                "echo 'the custom and posteriordb tables cannot be compared: {params.reason}' >&2; exit 1"

    elif CUSTOM_SHARED:
        ALL_TARGETS.append(AGREEMENT)

        rule custom_agreement:
            input:
                custom=f"{RESULTS}/figures/table_custom.json",
                posteriordb=f"{RESULTS}/figures/table_posteriordb.json",
            output:
                AGREEMENT,
            log:
                f"{RESULTS}/logs/custom_agreement.log",
            threads: 1
            resources:
                **job_resources("custom_agreement", config),
            shell:
                f"{shlex.quote(sys.executable)} -m pmd_bench.reports.agreement"
                + " {input.custom} {input.posteriordb} --out {output} > {log} 2>&1"
