"""docs/methods.md is generated from the method registries (reports/methods_page.py): the
committed page must equal a fresh render, list every method, and show each class's own family,
reference and constructor defaults, so a new method, a changed default or a hand edit fails here."""

import inspect

import pytest

import pmd
from pmd_bench.baselines import SGLD
from pmd_bench.baselines.peers.topic_models import PEERS
from pmd_bench.reports import methods_page
from pmd_bench.workflow.methods import METHODS

PAGE = methods_page.PAGE.read_text()


def section(name: str) -> str:
    """The page's section of method ``name``, up to the next heading."""
    return PAGE.split(f"### `{name}`\n", 1)[1].split("\n#", 1)[0]


def test_committed_page_equals_render():
    assert PAGE == methods_page.render(), "docs/methods.md is stale: run pmd_bench.reports.methods_page.main(False)"


def test_every_registered_name_has_one_section():
    assert not set(METHODS) & set(PEERS)
    for name in [*METHODS, *PEERS]:
        assert PAGE.count(f"### `{name}`\n") == 1, name
    assert PAGE.count("\n### ") == len(METHODS) + len(PEERS)


@pytest.mark.parametrize("name", sorted({**METHODS, **PEERS}))
def test_every_class_names_its_own_family_and_reference(name):
    """Declared on the class itself, so a subclass (SVI-GP of structured PMD, SMC-GP of one-pass SMC)
    cannot show its parent's."""
    cls = methods_page.registry()[name]
    for attr in ("method_family", "reference"):
        value = cls.__dict__.get(attr)
        assert isinstance(value, str) and value.strip(), f"{cls.__qualname__}.{attr}"
        assert f"- {attr.removeprefix('method_')}: {value}\n" in section(name)
    assert f"- class: `{cls.__module__}.{cls.__qualname__}`" in section(name)


def test_defaults_shown_are_the_signatures():
    assert inspect.signature(SGLD).parameters["burn_in"].default == 0.5
    assert "| `burn_in` | `int \\| float` | `0.5` |" in section("sgld")
    pmd_rows = section("pmd")
    assert "| `num_particles` | `int` | required |" in pmd_rows
    for arg, kind, default in [("variant", "str", "robust"), ("strategy", "str", "hybrid"), ("rejuvenate", "Any", "auto")]:
        assert inspect.signature(pmd.PMD).parameters[arg].default == default
        assert f'| `{arg}` | `{kind}` | `"{default}"` |' in pmd_rows
    assert "| `max_substeps` | `int` | `64` |" in pmd_rows
    assert "`data_size`" not in pmd_rows and "| `data` |" not in pmd_rows  # supplied by the workflow


def test_default_formats():
    assert [methods_page.show(v) for v in (None, True, "robust", 1.0, 1e-5, 3.141592653589793, {"kind": "sqrt"})] == [
        "null", "true", '"robust"', "1.0", "1e-05", "≈3.14159", '{"kind": "sqrt"}']


def test_configs_that_run_a_method_are_named():
    assert "- configured in: `default.yaml`: sparse_gp; `paper.yaml`: sparse_gp\n" in section("pmd_gp")
    assert "`default.yaml`: lda" in section("tomotopy_gibbs")  # a peer library counts too


def test_a_class_without_a_family_is_refused():
    class Bare:
        """A method that says nothing about itself."""

    with pytest.raises(ValueError, match="Bare needs a non-empty method_family"):
        methods_page.about(Bare)


def test_check_names_a_stale_page(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "methods.md"
    stale.write_text(PAGE.replace("| `max_substeps` | `int` | `64` |", "| `max_substeps` | `int` | `32` |"))
    monkeypatch.setattr(methods_page, "PAGE", stale)
    assert methods_page.main(check=True) == 1
    assert "max_substeps" in capsys.readouterr().err
    assert methods_page.main(check=False) == 0
    assert stale.read_text() == PAGE and methods_page.main(check=True) == 0
