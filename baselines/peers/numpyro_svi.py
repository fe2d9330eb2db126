"""NumPyro's SVI with a full-rank Gaussian guide behind pmd-bench's interface.

The black-box variational inference a NumPyro user would write for a model known only through
``log p(θ)`` and ``log p(x|θ)``: automatic differentiation VI with a full-rank Gaussian
(Kucukelbir, Tran, Ranganath, Gelman & Blei, JMLR 2017, sec. 2.3; the black-box ELBO of
Ranganath, Gerrish & Blei, AISTATS 2014) as NumPyro implements it — ``AutoMultivariateNormal``
guide, ``Trace_ELBO``, ``numpyro.optim.Adam``, one ``svi.update`` per mini-batch.

The NumPyro model has one latent site ``theta`` (an improper flat density, so that the prior
enters exactly as the user's ``log p(θ)``) and two factors: ``log p(θ)`` and
``N/B · Σ_b log p(x_b|θ)`` over the mini-batch, whose expectation over batches is the full-data
log-likelihood, so the ELBO estimate is unbiased (the mini-batch estimate of Hoffman, Blei,
Wang & Paisley 2013).

The start is NumPyro's own (its users write ``svi.init(rng_key, *model_args)``): the guide's
``init_loc_fn`` default, ``init_to_uniform`` (``U(-2, 2)`` in every unconstrained coordinate; the
site is improper, so ``init_to_median`` would defer to it too), redrawn by NumPyro's
``find_valid_initial_params`` (up to 100 tries) until the model's log density and its gradient are
finite there. Given the data set (``data=``, as the harness's runner does), that log density is the
full-data log joint, so a start outside the likelihood's support is redrawn, as for a NumPyro user
who passes their data to ``svi.init``; without it, only ``log p(θ)``.

Work (:func:`pmd.interface.work`): ``Trace_ELBO(num_particles=S)`` draws ``S`` values of ``θ``
from the guide and differentiates the model's log density at each (reparameterised), so one
``svi.update`` on ``B`` rows evaluates ``B·S`` likelihood terms and their gradients. The start's
full-data value and gradient is ``start_work = (N, N)`` (one try; NumPyro does not report its
redraws, which are free where the first try is valid).

A run whose ELBO or guide parameters go non-finite records the step (``diverged_at``), and
``posterior`` then raises ``FloatingPointError`` naming it and the learning rate, as the house
methods do (:func:`baselines._common.refuse_diverged`): a NaN guide is not a posterior.

Nothing here imports ``pymc.sampling.jax``, which switches JAX to float64 for the whole process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoMultivariateNormal
from numpyro.infer.svi import SVIState
from numpyro.optim import Adam

from pmd.interface import ConfigError, work
from pmd.posterior import GaussianPosterior

from .._common import first_nonfinite, refuse_diverged, require_common, require_full_data

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class NumPyroSVIState:
    """NumPyro's optimizer state (the guide's unconstrained parameters and Adam's moments), the
    step count and the first step whose ELBO or parameters went non-finite (-1 while none has).
    NumPyro's own ``SVIState`` also carries a PRNG key; here each ``step`` gets its key from the
    caller instead, so the state holds none."""

    optim_state: Any
    step: Array  # int32
    diverged_at: Array  # int32


def _require_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return float(value)


class NumPyroSVI:
    """NumPyro SVI with an ``AutoMultivariateNormal`` guide on mini-batches (module docstring).

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``S``, the Monte Carlo draws of ``θ`` per ELBO gradient
            (``Trace_ELBO(num_particles=S)``); default 1, NumPyro's.
        learning_rate: Adam's constant step (default 1e-2: Adam normalises the gradient, so this
            is about the per-step move of each parameter whatever the scale of ``N``; 2000 steps
            reach the conjugate posteriors of the tests to within Adam's noise floor).
        init_scale: the guide's initial standard deviation in every coordinate (default 0.1,
            NumPyro's: a narrow start keeps the first ELBO gradients of a sharp posterior sane).
        data: the whole data set, for NumPyro's start (module docstring); optional.

    The guide's mean starts where NumPyro's defaults put it (module docstring). The posterior is
    the guide, :class:`pmd.posterior.GaussianPosterior` ``N(loc, scale_tril scale_trilᵀ)``.

    ``init`` must run before ``step`` and ``posterior``: NumPyro's ``svi.init`` traces the model
    and stores the guide's prototype and the parameters' constraint transforms on the ``SVI`` and
    guide objects, not in the state.
    """

    # what it maximises (the ELBO, as Trace_ELBO), so the tuning protocol scores it by the ELBO
    # (workflow.tuning.elbo_criterion), not by a held-out predictive
    maximises = "elbo"

    method_family = "variational inference"
    reference = "NumPyro `numpyro.infer.SVI` with `AutoMultivariateNormal` (Kucukelbir et al., JMLR 2017)"

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int = 1,
        learning_rate: float = 1e-2,
        init_scale: float = 0.1,
        data: Any = None,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.data = None if data is None else require_full_data(model, data, self.data_size)
        self.start_work = (0.0, 0.0) if data is None else (float(self.data_size), float(self.data_size))
        self.learning_rate = _require_positive("learning_rate", learning_rate)
        self.init_scale = _require_positive("init_scale", init_scale)
        self.guide = AutoMultivariateNormal(self.numpyro_model, init_scale=self.init_scale)
        self.svi = SVI(self.numpyro_model, self.guide, Adam(self.learning_rate),
                       Trace_ELBO(num_particles=self.num_particles))
        self._step = jax.jit(self._step_impl)

    def numpyro_model(self, batch: Any = None) -> None:
        """``θ`` with density ``p(θ)``, times ``p(x_b|θ)^{N/B}`` for the batch (none at ``init``)."""
        theta = numpyro.sample("theta", dist.ImproperUniform(dist.constraints.real_vector, (), (self.model.dim,)))
        numpyro.factor("log_prior", self.model.log_prior(theta))
        if batch is not None:
            size = jax.tree_util.tree_leaves(batch)[0].shape[0]
            loglik = jax.vmap(self.model.log_likelihood, in_axes=(None, 0))(theta, batch)
            numpyro.factor("log_likelihood", self.data_size / size * jnp.sum(loglik))

    def init(self, key: Array) -> NumPyroSVIState:
        """NumPyro's ``svi.init`` at its defaults, on the data set when it was given (module docstring)."""
        svi_state = self.svi.init(key, self.data)
        return NumPyroSVIState(svi_state.optim_state, jnp.asarray(0, jnp.int32), jnp.asarray(-1, jnp.int32))

    def step(self, key: Array, state: NumPyroSVIState, batch: Any) -> tuple[NumPyroSVIState, dict]:
        """One ``svi.update`` on the batch's ELBO estimate."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: NumPyroSVIState) -> GaussianPosterior:
        """The guide ``N(loc, scale_tril scale_trilᵀ)``; ``FloatingPointError`` naming the step and the
        learning rate if the run went non-finite."""
        refuse_diverged("NumPyro SVI", state.diverged_at, lambda t: self.learning_rate)
        params = self.svi.get_params(SVIState(state.optim_state, None, None))
        return GaussianPosterior(params["auto_loc"], params["auto_scale_tril"])

    def _step_impl(self, key: Array, state: NumPyroSVIState, batch: Any) -> tuple[NumPyroSVIState, dict]:
        svi_state, loss = self.svi.update(SVIState(state.optim_state, None, key), batch)
        grads = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles
        leaves = jnp.concatenate([jnp.ravel(x) for x in (loss, *jax.tree_util.tree_leaves(self.svi.get_params(svi_state)))])
        step = state.step + 1
        return (NumPyroSVIState(svi_state.optim_state, step, first_nonfinite(state.diverged_at, step, leaves)),
                {"elbo": -loss, **work(grads, grads)})
