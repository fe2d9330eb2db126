# The equal-cost view (reports/cost.py): per experiment whose rule file registered its
# inputs in COST_INPUTS (the run files its own report reads, and the floor's data file where the
# criterion needs it), the cost-to-threshold table and figure. Included after the experiments.
import os

COST_TARGETS = [f"{RESULTS}/figures/cost_{name}.{suffix}" for name in COST_INPUTS for suffix in ("md", "png")]
# the leaderboards (reports/leaderboard.py): one per experiment from the same runs, and their digest
LEADERBOARDS = [f"{RESULTS}/figures/leaderboard_{name}.json" for name in COST_INPUTS]
LEADERBOARD = f"{RESULTS}/figures/leaderboard.md"
# the data and performance profiles with bootstrap bands (reports/profiles.py): one figure, JSON and
# Markdown per experiment, from the same runs and floor
PROFILES = [f"{RESULTS}/figures/profiles_{name}.{suffix}" for name in COST_INPUTS for suffix in ("png", "json", "md")]

ALL_TARGETS.extend(COST_TARGETS + PROFILES + [LEADERBOARD])


rule cost_report:
    input:
        unpack(lambda wildcards: COST_INPUTS[wildcards.experiment]),
    output:
        table=f"{RESULTS}/figures/cost_{{experiment}}.md",
        figure=f"{RESULTS}/figures/cost_{{experiment}}.png",
        board=f"{RESULTS}/figures/leaderboard_{{experiment}}.md",
        board_json=f"{RESULTS}/figures/leaderboard_{{experiment}}.json",
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
        "(" + PMD_BENCH + " report cost --experiment {wildcards.experiment} {params.data} --runs {input.runs}"
        + " --out {output.table} --figure {output.figure} && " + PMD_BENCH + " report leaderboard"
        + " --experiment {wildcards.experiment} {params.data} --runs {input.runs} --out {output.board}) > {log} 2>&1"


rule profile_report:
    input:
        unpack(lambda wildcards: COST_INPUTS[wildcards.experiment]),
    output:
        figure=f"{RESULTS}/figures/profiles_{{experiment}}.png",
        summary=f"{RESULTS}/figures/profiles_{{experiment}}.json",
        text=f"{RESULTS}/figures/profiles_{{experiment}}.md",
    wildcard_constraints:
        experiment="|".join(COST_INPUTS) or "(?!)",
    log:
        f"{RESULTS}/logs/profiles_{{experiment}}.log",
    threads: 1
    resources:
        **job_resources("profile_report", config),
    params:
        data=lambda wildcards, input: f"--data {input.data}" if "data" in input.keys() else "",
    shell:
        PMD_BENCH + " report profile --experiment {wildcards.experiment} {params.data} --runs {input.runs}"
        " --out {output.figure} > {log} 2>&1"


rule leaderboard:
    input:
        boards=LEADERBOARDS,
        profiles=[f"{RESULTS}/figures/profiles_{name}.json" for name in COST_INPUTS],  # read beside each board
    output:
        LEADERBOARD,
    log:
        f"{RESULTS}/logs/leaderboard.log",
    threads: 1
    resources:
        **job_resources("leaderboard", config),
    params:
        source=lambda wildcards: shlex.quote(
            f"From the results in `{RESULTS}/` (config: "
            + (", ".join(f"`{os.path.relpath(path)}`" for path in workflow.configfiles) or "the embedded default")
            + "; the commit of each experiment's run files is in the last column)"),
    shell:
        PMD_BENCH + " report digest --data {input.boards} --source {params.source} --out {output} > {log} 2>&1"
