#!/usr/bin/env bash
# The checks that need an accelerator, for whoever is lent a GPU: each benchmark runs
# under its own time limit (LIMITS below) with its report in results/benchmarks/accelerator/, and
# results/benchmarks/accelerator.md, the docs block `accelerator` (README, "On a GPU"), collects
# their tables. A benchmark past its limit or failing is named in that file instead of its table.
# All eight take up to 25 min, more than one 10-minute device command and more than one device lease's
# 15 minutes of device time: run them as five commands, over several leases,
#   benchmarks/accelerator.sh batched_logistic                        (up to 4.7 min)
#   benchmarks/accelerator.sh batched_seeds sparse_gp_cost pmd_step   (up to 5.5 min)
#   benchmarks/accelerator.sh growing_n                               (up to 7.3 min; 6.0 on an H100, 2026-11-27)
#   benchmarks/accelerator.sh pmd_profile pmd_profile_noautotune      (up to 5 min; pmd_profile 1 min on an H100)
#   benchmarks/accelerator.sh block_rows                              (up to 2.5 min; not yet run on a GPU)
# carrying results/benchmarks/accelerator from one to the next. Then, on any machine:
#   pmd-bench docs --block accelerator
# Where a lease ran the benchmarks' own commands instead (their reports copied from the device's
# output into results/benchmarks/accelerator/), `benchmarks/accelerator.sh --collect` rebuilds
# accelerator.md from the tables there without running anything or needing a GPU.
#
#   1. the logistic repetitions batched on the device against one after another
#      (bench_batched_logistic.py, paper settings, 10 seeds: 60 compilations one after another, about
#      4 s each on an H100 (2026-11-26), the most of its time; with a CPU run's
#      results/benchmarks/batched_logistic_cpu.json present, also the device-against-CPU table)
#   2. the mixture's repetitions batched (bench_batched_seeds.py, 10 seeds, one round: on an H100
#      each of the 44 compilations takes seconds, and two rounds did not fit 60 s)
#   3. a paper-scale sparse-GP step: M = 1,024 inducing inputs, float64 (bench_sparse_gp_cost.py)
#   4. the PMD step against its core, particles and KDE (bench_pmd_step.py)
#   5. PMD against NUTS, tempered SMC, SGLD and SVI at N = 10^4, 10^5, 10^6 (bench_growing_n.py, NUTS
#      timed at every N)
#   6. where the default PMD's time goes at N = 10^6: compilation, streaming steps, moves
#      (profile_pmd_default.py; on an H100 compilation took 22 s and the pass 1.2 s, 2026-11-27)
#   7. the same with XLA's GPU autotuning off: how much of that compilation is autotuning; with
#      --parts, also the programs without the independence sweeps and with one global kernel, to see
#      whether the GPU's compilation grows with the kernels as the CPU's does (about 5.5 ms each here)
#   8. the moves' block size: one full read at N = 10^6 for several blocks against the default's
#      (bench_block_rows.py; the default is 4,096 rows on an accelerator, about 2^20 particle-rows on
#      a CPU: whether smaller blocks also pay on the GPU, or larger ones)
#
# Usage: benchmarks/accelerator.sh [--collect] [NAME...] (PYTHON: the interpreter, default
# .venv/bin/python, with jax[cuda12] installed). NAMEs (from LIMITS) run only those benchmarks, for a
# device lease too short for all: the others' tables from an earlier run in
# results/benchmarks/accelerator/ are kept in accelerator.md, each marked as an earlier run's. Exits 2
# without a GPU (JAX's default device must be one), except with --collect.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
OUT=results/benchmarks/accelerator
export TQDM_DISABLE=1 MPLBACKEND=Agg

COLLECT=0
if [ "${1:-}" = --collect ]; then
  COLLECT=1
  shift
else
  device="$("$PY" -c 'import jax; d = jax.devices()[0]; print(d.platform, d.device_kind)')" || exit 2
  case "$device" in
    gpu*|cuda*) ;;
    *) echo "accelerator.sh: JAX's default device is '$device', not a GPU" >&2; exit 2 ;;
  esac
fi
mkdir -p "$OUT"

# name | seconds allowed | command
LIMITS=(
  "batched_logistic|280|benchmarks/bench_batched_logistic.py --out $OUT/batched_logistic.json"
  "batched_seeds|150|benchmarks/bench_batched_seeds.py --rounds 1 --out $OUT/batched_seeds.json"
  "sparse_gp_cost|120|benchmarks/bench_sparse_gp_cost.py --inducing 1024 --out $OUT/sparse_gp_cost.json"
  "pmd_step|60|benchmarks/bench_pmd_step.py --out $OUT/pmd_step.json"
  "growing_n|440|benchmarks/bench_growing_n.py --nuts-max-n 1000000 --out $OUT/growing_n"
  "pmd_profile|120|benchmarks/profile_pmd_default.py --rows 1000000 --features 20 --passes 1 --out $OUT/pmd_profile"
  "pmd_profile_noautotune|180|benchmarks/profile_pmd_default.py --rows 1000000 --features 20 --passes 1 --xla-flags=--xla_gpu_autotune_level=0 --parts --out $OUT/pmd_profile_noautotune"
  "block_rows|150|benchmarks/bench_block_rows.py --out $OUT/block_rows.json"
)
for only in "$@"; do
  printf '%s\n' "${LIMITS[@]}" | grep -q "^$only|" || { echo "accelerator.sh: no benchmark '$only' (LIMITS)" >&2; exit 2; }
done
declare -A STATUS
for entry in "${LIMITS[@]}"; do
  IFS='|' read -r name limit cmd <<<"$entry"
  if [ "$COLLECT" = 1 ]; then
    STATUS[$name]="$([ -s "$OUT/$name.md" ] && echo collected || echo "not run (no table in $OUT)")"
    continue
  fi
  if [ "$#" -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
    if [ -s "$OUT/$name.md" ]; then
      STATUS[$name]="earlier"
    else
      STATUS[$name]="not run (not among this run's names: $*)"
    fi
    continue
  fi
  rm -f "$OUT/$name.md"  # a table from an earlier run must not stand in for this one's
  t0=$SECONDS
  # shellcheck disable=SC2086  # the command's words
  timeout "$limit" "$PY" $cmd > "$OUT/$name.log" 2>&1
  rc=$?
  STATUS[$name]="exit $rc after $((SECONDS - t0)) s (limit $limit s)"
  echo "$name: ${STATUS[$name]}"
done
if [ -s results/benchmarks/batched_logistic_cpu.json ] && [ -s "$OUT/batched_logistic.json" ]; then
  "$PY" benchmarks/bench_batched_logistic.py --compare results/benchmarks/batched_logistic_cpu.json \
    "$OUT/batched_logistic.json" --out "$OUT/batched_logistic_compare.json" > /dev/null
fi

{
  if [ "$COLLECT" = 1 ]; then
    echo "Collected by \`benchmarks/accelerator.sh --collect\` ($(date -u '+%Y-%m-%d %H:%M UTC'), commit \`$(git rev-parse --short=10 HEAD)\`) from the tables in $OUT, each of which names its device; the benchmarks ran on a lent GPU by their own commands (LIMITS)."
  else
    echo "Run by \`benchmarks/accelerator.sh\` on ${device#* } ($(date -u '+%Y-%m-%d %H:%M UTC'), commit \`$(git rev-parse --short=10 HEAD)\`), $SECONDS s in all."
  fi
  for entry in "${LIMITS[@]}" "batched_logistic_compare||"; do
    IFS='|' read -r name _ _ <<<"$entry"
    echo
    echo "## $name"
    echo
    if [ "$name" != batched_logistic_compare ] && [ "${STATUS[$name]}" = earlier ]; then
      echo "From an earlier run of this script (not rerun this time):"
      echo
      cat "$OUT/$name.md"
    elif [ -s "$OUT/$name.md" ]; then  # run now, or collected
      cat "$OUT/$name.md"
    elif [ "$name" = batched_logistic_compare ] && [ ! -s "$OUT/batched_logistic.json" ]; then
      echo "No table: batched_logistic has no report from this device."
    elif [ "$name" = batched_logistic_compare ]; then
      echo "No CPU report (results/benchmarks/batched_logistic_cpu.json) beside this run: the CPU's table is the block batched-logistic above."
    elif [ "${STATUS[$name]#not run}" != "${STATUS[$name]}" ]; then
      echo "${STATUS[$name]^}."
    else
      echo "Did not finish: ${STATUS[$name]}; its log is $OUT/$name.log."
    fi
  done
} > results/benchmarks/accelerator.md.tmp && mv results/benchmarks/accelerator.md.tmp results/benchmarks/accelerator.md
cat results/benchmarks/accelerator.md
