"""Peak memory and time of preparing mnist8m-synth-6v8 (the target: 1.6M deformed digits under 4 GB).

    PYTHONPATH=. python benchmarks/bench_mnist8m_synth_memory.py                 # 50,000 rows
    PYTHONPATH=. python benchmarks/bench_mnist8m_synth_memory.py --rows 200000
    PYTHONPATH=. python benchmarks/bench_mnist8m_synth_memory.py --paper-scale   # 1,588,815 rows

(``PYTHONPATH=.`` is not needed once the project is installed.) The MNIST files come from the
data directory or the offline mirror (``PMD_BENCH_DATA_DIR``, ``PMD_BENCH_DATA_MIRROR``). The
whole preparation runs in this process (deformation, temporary pixel store, two PCA passes, the
output ``.npz``), written to a temporary directory. Reports the peak resident set size
(``getrusage(RUSAGE_SELF).ru_maxrss``) before and after, the growth per row, and exits with
status 1 if the peak reaches ``--limit-gb``. ``--out`` writes the report (JSON) and its sentence
(``.md``) for the README.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from pmd_bench.datasets.fetch import fetch
from pmd_bench.datasets.mnist8m import MNIST8M_6V8_ROWS, prepare_mnist8m_synth_6v8
from pmd_bench.datasets.registry import DATASETS, SOURCES
from pmd_bench.datasets.settings import resolve_settings
from pmd_bench.reports import benchmarks as bench_report


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def main() -> int:
    """Run the benchmark; prints one JSON line and returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--paper-scale", action="store_true", help=f"{MNIST8M_6V8_ROWS:,} rows, as MNIST8M 6-vs-8")
    parser.add_argument("--limit-gb", type=float, default=4.0, help="fail when the peak RSS reaches this (GB)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where to write (default: a temporary directory)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the report here (.json) and its sentence beside it (.md)")
    args = parser.parse_args()
    rows = MNIST8M_6V8_ROWS if args.paper_scale else args.rows
    settings = resolve_settings()
    paths = [fetch(SOURCES[name], settings) for name in DATASETS["mnist8m-synth-6v8"].sources]
    before = _peak_rss_bytes()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        out = Path(work) / "mnist8m-synth-6v8.npz"
        summary = prepare_mnist8m_synth_6v8(*paths, out, rows=rows)
        output_bytes = out.stat().st_size
    seconds = time.perf_counter() - start
    peak = _peak_rss_bytes()
    report = {
        "rows": rows,
        "seconds": round(seconds, 1),
        "peak_rss_before_gb": round(before / 1e9, 3),
        "peak_rss_gb": round(peak / 1e9, 3),
        "rss_growth_bytes_per_row": round((peak - before) / rows, 1),
        "output_gb": round(output_bytes / 1e9, 3),
        "explained_variance": round(summary["explained_variance"], 4),
        "limit_gb": args.limit_gb,
    }
    print(json.dumps(report))
    if args.out is not None:
        bench_report.write(args.out, report, bench_report.mnist8m_synth_memory)
    return 0 if peak < args.limit_gb * 1e9 else 1


if __name__ == "__main__":
    sys.exit(main())
