"""Bad input to the runner gets a clear, early error that names what is wrong."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import pmd
from baselines_helpers import Conjugate
from pmd import ConfigError


@pytest.fixture(scope="module")
def conj():
    return Conjugate.make(num_data=200)


def _nan_row(conj):
    bad = conj.data.copy()
    bad[17, 1] = np.nan
    return bad


CASES = {
    "a NaN in one row": (lambda c: dict(data=_nan_row(c)), r"non-finite values .* 1 row\(s\), first rows \[17\]"),
    "batch larger than the data": (lambda c: dict(batch_size=500), r"batch_size=500 is larger than the data set's 200"),
    "a list of lists": (lambda c: dict(data=c.data.tolist()), r"not an array with the rows on its leading axis"),
    "an integer key": (lambda c: dict(key=0), r"key must be a JAX PRNG key such as jax\.random\.key\(0\)"),
    "PMD's data= not the run's": (lambda c: dict(method=pmd.PMD(c.model, 200, 50, data=c.data + 1.0)),
                                  r"built with data= that is not the data set given to the run"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_run_refuses_bad_input_before_any_step(conj, case):
    change, message = CASES[case]
    args = dict(method=pmd.PMD(conj.model, 200, 50), data=conj.data, key=jax.random.key(0), batch_size=10)
    args.update(change(conj))
    with pytest.raises(ConfigError, match=message):
        pmd.run(args["method"], args["data"], args["key"], batch_size=args["batch_size"])


@pytest.mark.slow
def test_run_batched_takes_an_array_of_keys(conj):
    """``jax.random.split(key, 2)`` is how users make keys: it is accepted as a list of keys is."""
    method = pmd.PMD(conj.model, 200, 50)
    from_array = pmd.run_batched(method, conj.data, jax.random.split(jax.random.key(0), 2), batch_size=10,
                                 num_passes=0.1)
    from_list = pmd.run_batched(method, conj.data, list(jax.random.split(jax.random.key(0), 2)), batch_size=10,
                                num_passes=0.1)
    assert len(from_array) == 2
    np.testing.assert_array_equal(np.asarray(from_array[1].posterior.samples), np.asarray(from_list[1].posterior.samples))
