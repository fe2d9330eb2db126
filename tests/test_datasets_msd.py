"""YearPredictionMSD (H.3.2) on small zips in the UCI format, written by the tests."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.msd import (
    MSD_FIRST_ROW,
    MSD_MEMBER,
    check_source,
    prepare_msd,
    random_subset,
    read_msd,
)

ROWS, TRAIN_ROWS = 12, 9


def _table(rows: int = ROWS) -> np.ndarray:
    rng = np.random.default_rng(0)
    table = np.column_stack([rng.integers(1950, 2011, rows), rng.normal(0, 30, (rows, 90))]).round(5)
    table[0, :6] = [float(v) for v in MSD_FIRST_ROW.split(",")]
    return table


def _write_zip(path, table: np.ndarray, member: str = MSD_MEMBER) -> None:
    lines = [",".join([str(int(row[0]))] + [f"{v:.5f}" for v in row[1:]]) for row in table]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, "\n".join(lines) + "\n")


@pytest.fixture
def msd_zip(tmp_path):
    path = tmp_path / "YearPredictionMSD.txt.zip"
    table = _table()
    _write_zip(path, table)
    return path, table


def test_read_msd_parses_the_csv(msd_zip):
    path, table = msd_zip
    np.testing.assert_allclose(read_msd(path, rows=ROWS), table)


def test_content_check_names_shape_first_row_and_member(msd_zip, tmp_path):
    path, table = msd_zip
    with pytest.raises(FormatError, match="12 rows x 91 columns, expected 515,345 x 91"):
        check_source(path)
    bad_first = table.copy()
    bad_first[0, 1] = 1.0
    _write_zip(tmp_path / "first.zip", bad_first)
    with pytest.raises(FormatError, match=r"first\.zip: first row starts '2001,1\.00000"):
        read_msd(tmp_path / "first.zip", rows=ROWS)
    _write_zip(tmp_path / "member.zip", table, member="other.txt")
    with pytest.raises(FormatError, match=r"no member 'YearPredictionMSD\.txt'"):
        read_msd(tmp_path / "member.zip", rows=ROWS)
    (tmp_path / "not.zip").write_bytes(b"plain text")
    with pytest.raises(FormatError, match=r"not\.zip: not a YearPredictionMSD CSV zip"):
        read_msd(tmp_path / "not.zip", rows=ROWS)


def test_prepare_standardises_and_maps_years_with_training_statistics(msd_zip, tmp_path):
    path, table = msd_zip
    summary = prepare_msd(path, tmp_path / "msd.npz", rows=ROWS, train_rows=TRAIN_ROWS)
    with np.load(tmp_path / "msd.npz") as data:
        assert data["X_train"].shape == (TRAIN_ROWS, 90) and data["X_test"].shape == (ROWS - TRAIN_ROWS, 90)
        np.testing.assert_allclose(data["X_train"].mean(axis=0), 0, atol=1e-5)
        np.testing.assert_allclose(data["X_train"].std(axis=0), 1, atol=1e-5)
        assert data["y_train"].min() == 0 and data["y_train"].max() == 1
        train_years = table[:TRAIN_ROWS, 0]
        expected_test = (table[TRAIN_ROWS:, 0] - train_years.min()) / (train_years.max() - train_years.min())
        np.testing.assert_allclose(data["y_test"], expected_test, rtol=1e-6)
        expected_x = (table[TRAIN_ROWS:, 1:] - table[:TRAIN_ROWS, 1:].mean(0)) / table[:TRAIN_ROWS, 1:].std(0)
        np.testing.assert_allclose(data["X_test"], expected_x, rtol=1e-5, atol=1e-5)
    assert summary == {"train": 9, "test": 3, "year_min": int(train_years.min()), "year_max": int(train_years.max())}


def test_random_subsets_are_seeded_and_from_the_right_part(msd_zip, tmp_path):
    path, _ = msd_zip
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        prepare_msd(
            path, tmp_path / f"{name}.npz", train_size=4, test_size=2, seed=seed, rows=ROWS, train_rows=TRAIN_ROWS
        )
    a, b, c = (dict(np.load(tmp_path / f"{name}.npz")) for name in "abc")
    np.testing.assert_array_equal(a["train_index"], b["train_index"])
    assert not np.array_equal(a["train_index"], c["train_index"])
    assert a["X_train"].shape == (4, 90) and a["X_test"].shape == (2, 90)
    assert a["train_index"].max() < TRAIN_ROWS and a["test_index"].max() < ROWS - TRAIN_ROWS
    prepare_msd(path, tmp_path / "full.npz", rows=ROWS, train_rows=TRAIN_ROWS)
    with np.load(tmp_path / "full.npz") as full:
        np.testing.assert_array_equal(a["X_test"], full["X_test"][a["test_index"]])


def test_random_subset_rejects_bad_sizes():
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(random_subset(5, None, rng), np.arange(5))
    with pytest.raises(ValueError, match=r"subset size must be in 1\.\.5, got 6"):
        random_subset(5, 6, rng)
