"""YearPredictionMSD for the sparse-GP regression of H.3.2.

The UCI file ``YearPredictionMSD.txt.zip`` holds one CSV member, ``YearPredictionMSD.txt``:
515,345 songs x 91 columns (the release year, then 90 timbre features); the official split is
the first 463,715 rows for training and the last 51,630 for testing (no song's artist is in both).
No checksum is published, so :func:`check_source` checks shape and the known first row, and the
fetcher pins the SHA-256 of the first copy that passes.

:func:`prepare_msd` standardises the features and maps the years linearly into [0, 1] (H.3.2:
"as in [5], the year values are linearly mapped into [0,1]. The data is standardized before
regression"), both with statistics of the official training part, and can draw random subsets of
given sizes from each part (H.3.2 tests on 5,163 songs).
"""

from __future__ import annotations

import io
import itertools
import zipfile
from pathlib import Path

import numpy as np

from pmd_bench.datasets.atomic import atomic_path
from pmd_bench.datasets.errors import FormatError

MSD_MEMBER = "YearPredictionMSD.txt"
MSD_ROWS = 515_345
MSD_COLUMNS = 91
MSD_TRAIN_ROWS = 463_715
MSD_FIRST_ROW = "2001,49.94357,21.47114,73.07750,8.74861,-17.40628"


def read_msd(path: Path, rows: int = MSD_ROWS) -> np.ndarray:
    """Parse the UCI zip into a float64 array of shape ``(rows, 91)``, checking shape and first row."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            if MSD_MEMBER not in archive.namelist():
                raise FormatError(f"{path}: no member {MSD_MEMBER!r} (members: {archive.namelist()})")
            with archive.open(MSD_MEMBER) as raw:
                text = io.TextIOWrapper(raw, encoding="ascii")
                first = text.readline()
                if not first.startswith(MSD_FIRST_ROW):
                    raise FormatError(f"{path}: first row starts {first[:50]!r}, expected {MSD_FIRST_ROW!r}")
                data = np.loadtxt(itertools.chain([first], text), delimiter=",", ndmin=2)
    except (zipfile.BadZipFile, ValueError, UnicodeDecodeError) as error:
        raise FormatError(f"{path}: not a YearPredictionMSD CSV zip ({error})") from None
    if data.shape != (rows, MSD_COLUMNS):
        raise FormatError(
            f"{path}: {data.shape[0]:,} rows x {data.shape[1]} columns, expected {rows:,} x {MSD_COLUMNS}"
        )
    return data


def check_source(path: Path) -> None:
    """Content check of the UCI zip (no published hash): 515,345 x 91 and the known first row."""
    read_msd(path)


def random_subset(n: int, size: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``size`` of ``n`` rows drawn without replacement; all rows when ``size`` is None."""
    if size is None:
        return np.arange(n)
    if not 0 < size <= n:
        raise ValueError(f"subset size must be in 1..{n:,}, got {size!r}")
    return np.sort(rng.choice(n, size=size, replace=False))


def prepare_msd(
    path: Path,
    out: Path,
    train_size: int | None = None,
    test_size: int | None = None,
    seed: int = 0,
    rows: int = MSD_ROWS,
    train_rows: int = MSD_TRAIN_ROWS,
) -> dict:
    """H.3.2: standardised features and years in [0, 1], official split, optional random subsets.

    Feature means/standard deviations and the year range (min to max, mapped to 0 to 1) come from
    the whole official training part; test years outside that range map outside [0, 1]. Then
    ``train_size``/``test_size`` rows (None: all) are drawn from each part with ``seed``. The
    output ``.npz`` holds float32 ``X_train``, ``y_train``, ``X_test``, ``y_test``, the statistics
    (``feature_mean``, ``feature_std``, ``year_min``, ``year_max``) and each kept row's position in
    its part (``train_index``, ``test_index``).
    """
    data = read_msd(path, rows)
    years, features = data[:, 0], data[:, 1:]
    mean, std = features[:train_rows].mean(axis=0), features[:train_rows].std(axis=0)
    if np.any(std == 0):
        raise FormatError(f"{path}: feature columns {np.flatnonzero(std == 0) + 1} are constant on the training part")
    year_min, year_max = years[:train_rows].min(), years[:train_rows].max()
    X = (features - mean) / std
    y = (years - year_min) / (year_max - year_min)
    rng = np.random.default_rng(seed)
    train_index = random_subset(train_rows, train_size, rng)
    test_index = random_subset(rows - train_rows, test_size, rng)
    with atomic_path(out) as tmp:
        np.savez(
            tmp,
            X_train=X[train_index].astype(np.float32),
            y_train=y[train_index].astype(np.float32),
            X_test=X[train_rows + test_index].astype(np.float32),
            y_test=y[train_rows + test_index].astype(np.float32),
            feature_mean=mean,
            feature_std=std,
            year_min=year_min,
            year_max=year_max,
            train_index=train_index,
            test_index=test_index,
        )
    return {"train": len(train_index), "test": len(test_index), "year_min": int(year_min), "year_max": int(year_max)}
