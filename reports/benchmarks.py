"""The benchmarks' result files: each script in ``benchmarks/`` writes its report as JSON and as a
Markdown table beside it (``results/benchmarks/<name>.json`` and ``.md``), so the README's cost
tables are generated blocks read from these files (:mod:`reports.readme`), never typed by hand.

Every table states what it is a ratio to: each benchmark times a reference in the same run (the
brief's rule: a bare time on a shared machine says little; a same-run ratio says what it costs).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from .resultfiles import atomic_path


def _fmt(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, without an exponent for the sizes these tables hold."""
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:,.0f}"


def _duration(hours: float) -> str:
    """A run time in the unit that reads best: seconds, minutes or hours."""
    seconds = 3600 * hours
    return f"{seconds:.2g} s" if seconds < 90 else f"{seconds / 60:.3g} min" if seconds < 5400 else f"{hours:.3g} h"


def _machine(report: dict[str, Any]) -> str:
    parts = list(dict.fromkeys(str(report[k]) for k in ("device", "backend", "platform") if k in report))
    if "cpus" in report:
        parts.append(f"{report['cpus']} CPUs")
    if "load_average" in report:
        parts.append(f"load average {report['load_average']:.1f} at the end (other jobs share the machine above "
                     f"{report.get('cpus') or 1})")
    return ", ".join(parts) or "unrecorded machine"


def particle_methods(r: dict[str, Any]) -> str:
    """``bench_particle_methods.py``: cost per point of NPL and SVGD beside PMD, SGLD and SVI; NPL's
    ``vmap`` against ``lax.map``; our SVGD against BlackJAX's."""
    s = r["settings"]
    rows = "\n".join(f"| {k} | {_fmt(r['ms_per_step'][k])} | {_fmt(r['us_per_point'][k])} |"
                     for k in r["ms_per_step"])
    return (f"Mixture (N = {s['N']}, batch {s['batch']}, m = {s['m']}), {s['steps']} steps timed in one jitted "
            f"scan, median of {s['rounds']} interleaved rounds, on "
            f"{_machine({'device': s['device'], **{k: r[k] for k in ('cpus', 'load_average') if k in r}})}.\n\n"
            f"| method | ms / step | µs / point visited |\n|---|---|---|\n{rows}\n\n"
            f"NPL's replicates `vmap`-ed run **{r['npl_parallel_speedup']:.2f}×** as fast as the same update "
            f"`lax.map`-ed one replicate after another; our SVGD step takes **{r['svgd_over_blackjax']:.2f}×** "
            f"BlackJAX's time (same particles, batches and kernel).")


def logistic_cost(r: dict[str, Any]) -> str:
    """``bench_logistic_cost.py``: each logistic method's step over the likelihoods of 1000 particles,
    per point, and the extrapolated paper-scale run; Pólya-Gamma Gibbs per row against the rows swept."""
    rows = "\n".join(
        f"| {k} | {v['x_likelihood']:.2f} | {_fmt(v['us_per_point'])} | "
        f"{_duration(v['full_run_hours'])}{' (one pass)' if k == 'smc' else ''} |"
        for k, v in r["methods"].items())
    gibbs = ", ".join(f"{_fmt(v['us_per_row'])} µs ({int(n):,} rows)" for n, v in r["gibbs"].items())
    return (f"Batch {r['batch']}, d = {r['dim']}, {r['steps_timed']} steps timed after warm-up, evaluation "
            f"excluded, on {_machine(r)}. Reference timed in the same run: the model's log-likelihoods of "
            f"1000 particles on one batch ({r['reference_ms_per_step']:.2f} ms). Full run: "
            f"{r['N']:,} rows × {r['passes']} passes at the measured cost.\n\n"
            f"| method | step ÷ likelihood of 1000 particles | µs per data point visited | full run |\n"
            f"|---|---|---|---|\n{rows}\n\n"
            f"Pólya-Gamma Gibbs, per row per sweep: {gibbs}; 1,100 sweeps of {r['N']:,} rows: "
            f"{_duration(r['gibbs_full_run_hours'])}.")


def sparse_gp_cost(r: dict[str, Any]) -> str:
    """``bench_sparse_gp_cost.py``: each sparse-GP method's step over one ``M × M`` Cholesky; our
    SVI-GP over GPJax's SVGP; PMD's state and the process's memory peak."""
    rows = "\n".join(f"| {k} | {_fmt(v['ms_per_step'])} | {v['x_cholesky']:.2f} | {v['x_cholesky_per_particle']:.3f} |"
                     for k, v in r["methods"].items())
    return (f"{r['dtype']}, {r['rows']:,} rows, d = {r['dim']}, M = {r['inducing']}, batch {r['batch']}, "
            f"{r['steps_timed']} steps timed after compilation, medians of {r['rounds']} interleaved rounds, on "
            f"{_machine(r)}. Reference timed in the same rounds: one `M × M` Cholesky factorisation "
            f"({_fmt(r['cholesky_ms']['median'])} ms; SoD: its one solve).\n\n"
            f"| method | ms / step | × Cholesky | × Cholesky per particle |\n|---|---|---|---|\n{rows}\n\n"
            f"Our SVI-GP step over GPJax's SVGP step (same `q(u)`, `Z` and batches): "
            f"**{r['svi_over_gpjax']:.2f}×**. PMD's state at these settings: {_fmt(r['pmd_state_mib'])} MiB; the "
            f"benchmark process's peak resident set: {_fmt(r['peak_rss_mib'])} MiB.")


def inducing_moves(r: dict[str, Any]) -> str:
    """``bench_inducing_moves.py``: one inducing-input proposal's evidence from the carried statistics
    (the block's rows and columns recomputed) over the same evidence computed afresh."""
    return (f"{r['dtype']}, {r['rows']:,} rows, d = {r['dim']}, M = {r['inducing']}, blocks of {r['block']}, "
            f"slices of {r['chunk_rows']:,} rows, medians of {r['rounds']} interleaved rounds after compilation, on "
            f"{_machine(r)}. Reference timed in the same rounds: the same proposal's evidence computed afresh "
            f"(`collapsed_evidence`).\n\n"
            f"| evidence of one proposal | ms |\n|---|---|\n| afresh (reference) | {_fmt(r['fresh_ms'])} |\n"
            f"| block update | {_fmt(r['update_ms'])} |\n\n"
            f"Block update over afresh: **{r['update_over_fresh']:.3f}×**; the two evidences differ by "
            f"{r['max_abs_diff']:.1e} nats (of {r['log_evidence']:,.0f}).")


def lda_cost(r: dict[str, Any]) -> str:
    """``bench_lda_cost.py``: ms per document, tokens per second, the paper's run extrapolated, and
    our online VB's speed against scikit-learn's and gensim's."""
    rows = "\n".join(f"| {k} | {_fmt(v)} | {r['tokens_per_second'][k]:,.0f} | {_duration(r['paper_run_hours'][k])} |"
                     for k, v in r["ms_per_document"].items())
    ratio = ", ".join(f"{r['svi_speed_ratio'][p]:.2f}× {p}'s" for p in r["svi_speed_ratio"])
    return (f"{r['documents']:,} documents of `{r['corpus']}` ({r['tokens_per_document']:.1f} tokens each on "
            f"average), K = {r['K']}, W = {r['W']:,}, batch {r['batch']}, steady state after compilation, evaluation "
            f"excluded, on {_machine(r)}. Tomotopy: per document-sweep of its collapsed Gibbs sampler.\n\n"
            f"| method | ms / document | tokens / s | paper's run |\n|---|---|---|---|\n{rows}\n\n"
            f"Our online VB (`svi_hoffman`) processes tokens at {ratio} rate (same run, same batches).")


def pmd_step(r: dict[str, Any]) -> str:
    """``bench_pmd_step.py``: PMD's two steps against the core each cannot avoid (goal: within 3×)."""
    rows = "\n".join(
        f"| {k} | {_fmt(v['step_ms'])} | {v['core']} | {_fmt(v['core_ms'])} | **{v['step_over_core']:.2f}** "
        f"| {v['step_over_likelihood']:.2f} |" for k, v in r["strategies"].items())
    return (f"Bayesian logistic regression, m = {r['particles']}, d = {r['dim']}, batch {r['batch']}, median of "
            f"{r['repeats']} repeats after compilation, on {_machine(r)}.\n\n"
            f"| strategy | step (ms) | core | core (ms) | step ÷ core (goal ≤ 3) | step ÷ the model's m×B "
            f"log-likelihoods |\n|---|---|---|---|---|---|\n{rows}")


def block_rows(r: dict[str, Any]) -> str:
    """``bench_block_rows.py``: one full read of the log target at each block size, against the
    default's block at the same particle count."""
    lines = []
    for m, entry in r["particles"].items():
        for chunk, reads in entry["sizes"].items():
            label = f"{int(chunk):,}" + (" (default)" if int(chunk) == entry["default_rows"] else "")
            cells = " | ".join(f"{_fmt(reads[k]['best_s'])} ({_fmt(min(reads[k]['rounds_s']))}-"
                               f"{_fmt(max(reads[k]['rounds_s']))}) | **{reads[k]['over_default']:.2f}**"
                               for k in ("value_and_grad", "value"))
            lines.append(f"| {int(m):,} | {label} | {cells} |")
    return (f"Synthetic logistic regression, N = {r['rows']:,}, d = {r['dim']}: one read of all rows by every "
            f"particle, compiled first, the median of {r['repeats']} in each of {r['rounds']} rounds (the sizes "
            f"interleaved within a round), on {_machine(r)}. Seconds: the best round (all rounds' medians); "
            f"÷ default: against the default's block at the same m, in the same run.\n\n"
            f"| m | rows per block | value and gradient (s) | ÷ default | value (s) | ÷ default |\n"
            f"|---|---|---|---|---|---|\n" + "\n".join(lines))


def sgld_vs_blackjax(r: dict[str, Any]) -> str:
    """``bench_sgld_vs_blackjax.py``: our parallel SGLD step against BlackJAX's, same batches and step."""
    return (f"{r['chains']} chains, d = {r['dim']}, batch {r['batch']}, N = {r['num_data']:,}, {r['steps']} steps "
            f"per repeat, {r['repeats']} alternating repeats, on {_machine(r)}.\n\n"
            f"| | ours | BlackJAX | ours ÷ BlackJAX |\n|---|---|---|---|\n"
            f"| µs / step, fastest repeat | {_fmt(r['us_per_step']['ours_fastest'])} | "
            f"{_fmt(r['us_per_step']['blackjax_fastest'])} | **{r['ratio_fastest']:.2f}** |\n"
            f"| µs / step, median repeat | {_fmt(r['us_per_step']['ours_median'])} | "
            f"{_fmt(r['us_per_step']['blackjax_median'])} | {r['ratio_median']:.2f} |\n\n"
            f"Chain means of the final states differ by at most {r['max_mean_diff']:.3f} (same law, different "
            f"noise; typical |w| {r['typical_abs_w']:.3f}).")


def batched_seeds(r: dict[str, Any]) -> str:
    """``bench_batched_seeds.py``: repetitions as one vectorised program against one after another."""
    rows = "\n".join(f"| {k} | {_fmt(v['sequential_s'])} | {_fmt(v['batched_s'])} | **{v['speedup']:.2f}×** |"
                     for k, v in r["methods"].items())
    return (f"{r['seeds']} seeds of the mixture (N = {r['N']:,}, batch {r['batch']}, {r['steps']} steps, "
            f"m = {r['particles']}), wall time of the whole call with compilation, best of {r['rounds']} rounds, "
            f"on {_machine(r)}.\n\n"
            f"| method | one after another (s) | batched (s) | speed-up |\n|---|---|---|---|\n{rows}")


def batched_logistic(r: dict[str, Any]) -> str:
    """``bench_batched_logistic.py``: the logistic experiment's seeds batched against one after
    another, measured on a run's full schedule, and the paper run's stepping extrapolated."""
    rows = "\n".join(
        f"| {k} | {v['steps']:,} | {_fmt(v['sequential_s'])} | {_fmt(v['batched_s'])} | **{v['speedup']:.2f}×** | "
        f"{_fmt(v['sequential']['ms_per_step'])} / {_fmt(v['batched']['ms_per_step'])} | "
        f"{_duration(v['extrapolated_s']['sequential'] / 3600)} | {_duration(v['extrapolated_s']['batched'] / 3600)} |"
        for k, v in r["methods"].items())
    return (f"{r['seeds']} seeds of the logistic experiment's methods ({r['config']}'s entries), {r['data']}, "
            f"d = {r['dim']}, {r['passes']:g} passes, evaluation off; wall time of the whole call with compilation "
            f"(one compilation per seed one after another, one for the batch), on {_machine(r)}. ms / step: after "
            f"compilation, per step of all {r['seeds']} seeds together (one after another: the sum of theirs). "
            f"Paper run **extrapolated** from those: {r['paper_steps']:,} steps plus compilation.\n\n"
            f"| method | steps | one after another (s) | batched (s) | speed-up | ms / step (one after another / "
            f"batched) | paper run, one after another | paper run, batched |\n|---|---|---|---|---|---|---|---|\n"
            f"{rows}")


def batched_logistic_compare(r: dict[str, Any]) -> str:
    """Two ``bench_batched_logistic.py`` reports, a CPU's and an accelerator's: the paper run's seeds
    batched on the accelerator against the same seeds one after another on the CPU (both extrapolated
    from their own measured step costs; two machines, so not a same-run ratio, and labelled so)."""
    cpu, acc = r["cpu"], r["accelerator"]
    rows = "\n".join(
        f"| {k} | {_duration(cpu['methods'][k]['extrapolated_s']['sequential'] / 3600)} | "
        f"{_duration(acc['methods'][k]['extrapolated_s']['batched'] / 3600)} | "
        f"**{cpu['methods'][k]['extrapolated_s']['sequential'] / acc['methods'][k]['extrapolated_s']['batched']:.1f}×** |"
        for k in acc["methods"] if k in cpu["methods"])
    return (f"The paper's logistic run ({acc['paper_steps']:,} steps, {acc['seeds']} seeds), extrapolated from each "
            f"machine's measured step cost: one after another on {_machine(cpu)} against batched on "
            f"{_machine(acc)} (two machines, two runs: not a same-run ratio). The aim: 20× or more.\n\n"
            f"| method | CPU, one after another | accelerator, batched | speed-up |\n|---|---|---|---|\n{rows}")


def workflow_plan(r: dict[str, Any]) -> str:
    """``pmd-bench plan``: a config's jobs per rule and its wall time, extrapolated (workflow/plan.py)."""
    rows = "\n".join(f"| {rule} | {v['jobs']:,} | {_duration(v['seconds'] / 3600)} | {_duration(v['fixed_s'] / 3600)} | "
                     f"{_duration(v['longest_s'] / 3600)} |" for rule, v in r["rules"].items())
    mirror = "with" if r.get("offline_mirror") else "without"
    # the command as a user types it: none of --configfile for the embedded default
    command = " ".join(["snakemake"] + (["--configfile", *r["configfiles"]] if r["configfiles"] else []))
    return (f"`{command}` ({mirror} the offline data "
            f"mirror): **{r['jobs']:,} jobs**; their "
            f"expected run times add up to {_duration(r['total_s'] / 3600)} of one core. On {r['cores']} single-threaded "
            f"job slots the workflow takes at most **{_duration(r['wall_s'] / 3600)}** (**extrapolated**, not a measured "
            f"run, and an upper estimate: each job is charged its rule's measured anchor, the slowest method's rate, "
            f"scaled to the job, `workflow/resources.py`; total / slots + longest job bounds a greedy schedule, "
            f"`workflow/plan.py`). Of the total, "
            f"{_duration(r['fixed_s'] / 3600)} is the rules' fixed start-up, compilation and evaluation, charged per job at "
            f"the slowest small-config job measured (an upper bound); the rest scales with the config's sizes.\n\n"
            f"| rule | jobs | expected time (one core) | of it fixed | longest job |\n|---|---|---|---|---|\n{rows}")


def config_times(r: dict[str, Any]) -> str:
    """``benchmarks/config_time.py``: the measured wall time of ``snakemake`` on each config, one row
    per config (the embedded default first), each from a fresh clone with fresh caches."""
    ordered = sorted(r["configs"].values(), key=lambda row: (row["config"] != "default", row["config"]))
    rows = "\n".join(
        f"| {row['config']} | `{row['command']}` | {row['jobs']:,} | **{row['wall_s'] / 60:.1f} min** | "
        f"{row['cores']} | {row['machine']} (load average {row['load_average']:.1f} at the end) | {row['date']} | "
        f"`{row['commit'][:10]}` | {'set' if row['mirror'] else 'unset'} |" for row in ordered)
    return ("Measured wall time of the whole workflow per config (`benchmarks/config_time.py`): a fresh clone of the "
            "commit, no JAX compilation cache, no results, no cached data; mirror: whether "
            "`PMD_BENCH_DATA_MIRROR` was set (without it the posteriordb experiment is skipped).\n\n"
            "| config | command | jobs | wall time | cores | machine | date | commit | mirror |\n"
            f"|---|---|---|---|---|---|---|---|---|\n{rows}")


def mnist8m_synth_memory(r: dict[str, Any]) -> str:
    """``bench_mnist8m_synth_memory.py``: the memory peak of preparing the deformed-digit stand-in."""
    return (f"Preparing {r['rows']:,} deformed digits (`mnist8m-synth-6v8`) peaked at "
            f"**{r['peak_rss_gb']:.2f} GB** resident (limit {r['limit_gb']:.1f} GB) in {r['seconds']:.0f} s.")


def write(out: str | Path, report: dict[str, Any], render: Callable[[dict[str, Any]], str]) -> None:
    """Write ``report`` to ``out`` (JSON) and its table to ``out`` with the suffix ``.md``, each atomically:
    a crashed benchmark leaves the previous files whole. The machine's CPU count and its 1-minute load
    average at the end are added to the report and shown in the table's caption: a ratio measured
    while other jobs ran says so."""
    out = Path(out)
    report = {**report, "cpus": report.get("cpus", os.cpu_count()), "load_average": os.getloadavg()[0]}
    if out.suffix != ".json":
        raise ValueError(f"benchmark output {out}: give a .json path (the .md table is written beside it)")
    markdown = render(report)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(report, indent=1, sort_keys=True))
    with atomic_path(out.with_suffix(".md")) as tmp:
        tmp.write_text(markdown + "\n")
