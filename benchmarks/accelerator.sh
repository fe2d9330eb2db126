#!/usr/bin/env bash
# The checks that need an accelerator (issue 32), one command for whoever is lent a GPU, under
# 8 minutes in all: each benchmark runs under its own time limit (LIMITS below, 7 min together)
# with its report in results/benchmarks/accelerator/, and results/benchmarks/accelerator.md, the
# docs block `accelerator` (docs/results.md, "On a GPU"), collects their tables. A benchmark past
# its limit or failing is named in that file instead of its table. Then, on any machine:
#   pmd-bench docs --block accelerator
#
#   1. the logistic repetitions batched on the device against one after another
#      (bench_batched_logistic.py, paper settings, 10 seeds; with a CPU run's
#      results/benchmarks/batched_logistic_cpu.json present, also the device-against-CPU table)
#   2. the mixture's repetitions batched (bench_batched_seeds.py, 10 seeds)
#   3. a paper-scale sparse-GP step: M = 1,024 inducing inputs, float64 (bench_sparse_gp_cost.py)
#   4. the PMD step against its core, particles and KDE (bench_pmd_step.py)
#
# Usage: benchmarks/accelerator.sh (PYTHON: the interpreter, default .venv/bin/python, with
# jax[cuda12] installed). Exits 2 without a GPU (JAX's default device must be one).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
OUT=results/benchmarks/accelerator
export TQDM_DISABLE=1 MPLBACKEND=Agg

device="$("$PY" -c 'import jax; d = jax.devices()[0]; print(d.platform, d.device_kind)')" || exit 2
case "$device" in
  gpu*|cuda*) ;;
  *) echo "accelerator.sh: JAX's default device is '$device', not a GPU" >&2; exit 2 ;;
esac
mkdir -p "$OUT"

# name | seconds allowed | command
LIMITS=(
  "batched_logistic|180|benchmarks/bench_batched_logistic.py --out $OUT/batched_logistic.json"
  "batched_seeds|60|benchmarks/bench_batched_seeds.py --out $OUT/batched_seeds.json"
  "sparse_gp_cost|120|benchmarks/bench_sparse_gp_cost.py --inducing 1024 --out $OUT/sparse_gp_cost.json"
  "pmd_step|60|benchmarks/bench_pmd_step.py --out $OUT/pmd_step.json"
)
declare -A STATUS
for entry in "${LIMITS[@]}"; do
  IFS='|' read -r name limit cmd <<<"$entry"
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
  echo "Run by \`benchmarks/accelerator.sh\` on ${device#* } ($(date -u '+%Y-%m-%d %H:%M UTC'), commit \`$(git rev-parse --short=10 HEAD)\`), $SECONDS s in all."
  for entry in "${LIMITS[@]}" "batched_logistic_compare||"; do
    IFS='|' read -r name _ _ <<<"$entry"
    echo
    echo "## $name"
    echo
    if [ -s "$OUT/$name.md" ]; then
      cat "$OUT/$name.md"
    elif [ "$name" = batched_logistic_compare ]; then
      echo "No CPU report (results/benchmarks/batched_logistic_cpu.json) beside this run: the CPU's table is the block batched-logistic above."
    else
      echo "Did not finish: ${STATUS[$name]}; its log is $OUT/$name.log."
    fi
  done
} > results/benchmarks/accelerator.md.tmp && mv results/benchmarks/accelerator.md.tmp results/benchmarks/accelerator.md
cat results/benchmarks/accelerator.md
