"""The run-file archive (workflow/archive.py): save and restore round-trip byte for byte, an altered
archive or a conflicting result file is an error that names it, and the committed archive matches
its manifest."""

import json

import pytest

from pmd_bench.workflow import archive


@pytest.fixture
def dirs(tmp_path):
    results, store = tmp_path / "results", tmp_path / "archive"
    run = results / "paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz"
    run.parent.mkdir(parents=True)
    run.write_bytes(b"run file bytes")
    return results, store, run


def test_save_then_restore_into_an_empty_results_folder_gives_the_same_bytes(dirs, tmp_path):
    results, store, run = dirs
    assert archive.save([run], results, store, "abc123") == ["paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz"]
    entry = json.loads((store / archive.MANIFEST).read_text())["paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz"]
    assert entry["bytes"] == 14 and entry["commit"] == "abc123" and len(entry["sha256"]) == 64
    assert archive.save([run], results, store, "def456") == []  # same bytes: the first entry stays
    assert json.loads((store / archive.MANIFEST).read_text())["paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz"] == entry
    fresh = tmp_path / "fresh-results"
    assert archive.restore(store, fresh, "paper-sgp/") == (["paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz"], [])
    assert (fresh / "paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz").read_bytes() == b"run file bytes"
    assert archive.restore(store, fresh) == ([], ["paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz"])
    assert archive.restore(store, tmp_path / "other", "paper-lda/") == ([], [])


def test_an_altered_archive_file_is_named(dirs):
    results, store, run = dirs
    archive.save([run], results, store, "abc123")
    (store / "paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz").write_bytes(b"run file bytez")
    with pytest.raises(archive.ArchiveError, match=r"seed0.npz: its SHA-256 .* \(altered\)"):
        archive.verify(store)
    (store / "paper-sgp/sparse_gp/msd/runs/pmd/seed0.npz").unlink()
    with pytest.raises(archive.ArchiveError, match="seed0.npz: listed in .* but missing"):
        archive.verify(store)


def test_restore_never_overwrites_a_different_result_and_copies_nothing_then(dirs, tmp_path):
    results, store, run = dirs
    other = results / "paper-sgp/sparse_gp/msd/runs/svi/seed0.npz"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"svi")
    archive.save([run, other], results, store, "abc123")
    run.write_bytes(b"a rerun with other bytes")
    other.unlink()
    with pytest.raises(archive.ArchiveError, match="pmd/seed0.npz differs from the archived"):
        archive.restore(store, results)
    assert run.read_bytes() == b"a rerun with other bytes" and not other.exists()


def test_only_files_under_results_are_archived(dirs, tmp_path):
    results, store, _ = dirs
    outside = tmp_path / "elsewhere.npz"
    outside.write_bytes(b"x")
    with pytest.raises(archive.ArchiveError, match="elsewhere.npz: only files under"):
        archive.save([outside], results, store, "abc123")
    with pytest.raises(archive.ArchiveError, match="missing.npz: no such result file"):
        archive.save([results / "missing.npz"], results, store, "abc123")


def test_the_committed_archive_matches_its_manifest():
    """Every listed file has its recorded SHA-256, and every run file in archive/ is listed (an
    unlisted one would escape the check)."""
    entries = archive.verify(archive.ARCHIVE)
    assert all(archive.ARCHIVE.joinpath(rel).is_file() for rel in entries)
    on_disk = sorted(p.relative_to(archive.ARCHIVE).as_posix() for p in archive.ARCHIVE.rglob("*")
                     if p.is_file() and p.name not in {archive.MANIFEST, "README.md"})
    assert on_disk == entries
