"""Bayesian logistic regression (Dai et al. 2016, section 6 and Appendix H.2).

``p(y|x,w) = 1 / (1 + exp(-y wᵀx))`` with ``y ∈ {-1, +1}`` and the prior ``w ~ N(0, s² I)``
(H.2: the identity, ``s = 1``). The bias is a weight on a constant feature appended to every
input (:func:`add_bias`), so on the PCA-50 MNIST features ``d = 51``. A datum is the pytree
``{"x": (d,), "y": ()}``; a data set is ``{"x": (N, d), "y": (N,)}``.

The predictive scores of any posterior ``q`` on test pairs ``(x_j, y_j)`` (section 6 reports the
test error) are Monte Carlo averages over ``q``'s weighted samples ``(w_i, α_i)``:

* predictive probability ``p̂(y_j|x_j) = Σ_i α_i σ(y_j w_iᵀx_j)`` (the posterior predictive);
* test error: the fraction of ``j`` with ``p̂(y_j|x_j) ≤ ½`` (the Bayes decision under 0-1 loss;
  a tie counts as an error);
* test log-likelihood: ``1/J Σ_j log p̂(y_j|x_j)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..model import Model, ModelError, gaussian_log_density
from ..posterior import Posterior, own_draws
from ..weights import normalize

Array = jax.Array


def add_bias(x: np.ndarray) -> np.ndarray:
    """``(N, p) -> (N, p + 1)``: the inputs with a last column of ones (the bias feature)."""
    x = np.asarray(x, np.float32)
    if x.ndim != 2:
        raise ModelError(f"inputs must be a 2-d (rows, features) array, got shape {x.shape}")
    return np.concatenate([x, np.ones((x.shape[0], 1), np.float32)], axis=1)


def labelled(x: np.ndarray, y: np.ndarray, *, bias: bool = True) -> dict[str, np.ndarray]:
    """The data pytree ``{"x": (N, d), "y": (N,)}`` (float32; a bias column appended when ``bias``).

    Raises :class:`pmd.ModelError` when the labels are not all -1 or +1 or the row counts differ.
    """
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != np.shape(x)[0]:
        raise ModelError(f"labels must be a (N,) array matching the {np.shape(x)[0]} input rows, got shape {y.shape}")
    bad = ~np.isin(y, (-1, 1))
    if bad.any():
        raise ModelError(f"labels must be -1 or +1; found {np.unique(y[bad])[:5].tolist()}")
    return {"x": add_bias(x) if bias else np.asarray(x, np.float32), "y": y.astype(np.float32)}


@jax.custom_jvp
def log_sigmoid(z: Array) -> Array:
    """``log σ(z) = -log(1 + e^{-z}) = min(z, 0) - log1p(e^{-|z|})``, elementwise, stable for every ``z``
    (``-inf`` at ``-inf``, ``0`` at ``+inf``), with the derivative ``d/dz log σ(z) = σ(-z)`` given
    directly (a custom JVP), so that its second derivative is ``-σ(z) σ(-z)``.

    The same function as ``-jnp.logaddexp(0, -z)`` (and ``jax.nn.log_sigmoid``), written for speed:
    the likelihood's elementwise part, not the matrix product, is most of a particle method's cost on
    this model (``m × N`` evaluations per read of the data), and JAX's general ``logaddexp``, with its
    infinity and NaN handling and its own JVP, took about three times as long for the value (9.9-12.9
    against 3.5-4.4 ms) and 1.1-1.8 times as long for the value and every particle's gradient
    (measured here: 4,096 rows × 1,000 particles, d = 21, on this CPU; docs/findings.md, 2026-11-29).
    ``tests/test_logistic_model.py`` holds it to ``logaddexp``'s values and first and second
    derivatives."""
    return -(jnp.maximum(-z, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(z))))


@log_sigmoid.defjvp
def _log_sigmoid_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    return log_sigmoid(z), jax.nn.sigmoid(-z) * dz


@dataclass(frozen=True)
class BayesianLogisticRegression:
    """``y | x, w ~ p(y|x,w) = σ(y wᵀx)``, ``w ~ N(0, prior_std² I_d)`` (H.2).

    Args:
        dim: ``d``, the number of weights (features including the bias column).
        prior_std: ``s``, the prior's standard deviation (H.2: 1).
    """

    dim: int
    prior_std: float = 1.0

    def log_likelihood(self, w: Array, datum: Any) -> Array:
        """``log σ(y wᵀx) = -log(1 + exp(-y wᵀx))`` for one datum ``{"x": (d,), "y": ()}``
        (:func:`log_sigmoid`)."""
        return log_sigmoid(datum["y"] * (datum["x"] @ w))

    def log_prior(self, w: Array) -> Array:
        """``log N(w; 0, s² I)``."""
        return gaussian_log_density(w, 0.0, self.prior_std)

    def model(self) -> Model:
        """The :class:`pmd.Model` of this problem."""
        d, s = self.dim, self.prior_std
        return Model(
            dim=d,
            log_prior=self.log_prior,
            log_likelihood=self.log_likelihood,
            sample_prior=lambda key, n: s * jax.random.normal(key, (n, d)),
            name=f"bayesian-logistic-regression-{d}d",
        )

    def check_model(self, model: Model) -> None:
        """Raise :class:`pmd.ModelError` unless ``model`` has this prior and likelihood.

        Methods that use the logistic posterior's closed-form structure (Jaakkola-Jordan SVI,
        Pólya-Gamma Gibbs) use only ``dim`` and ``prior_std``; they call this to make sure, through
        the model's public functions at three fixed weights and one fixed datum per label, that
        the model they are handed is this one (log-densities compared up to a constant).
        """
        if model.dim != self.dim:
            raise ModelError(f"the model has dim={model.dim}, the logistic regression has d={self.dim} "
                             "(features including the bias column)")
        rng = np.random.default_rng(0)
        ws = jnp.asarray(rng.normal(0.0, 0.3, (3, self.dim)), jnp.float32)
        x = jnp.asarray(rng.normal(0.0, 1.0, self.dim), jnp.float32)
        for label in (-1.0, 1.0):
            datum = {"x": x, "y": jnp.asarray(label, jnp.float32)}
            ours = jax.vmap(lambda w, d=datum: model.log_prior(w) + model.log_likelihood(w, d))(ws)
            theirs = jax.vmap(lambda w, d=datum: self.log_prior(w) + self.log_likelihood(w, d))(ws)
            if not np.allclose(np.diff(np.asarray(ours)), np.diff(np.asarray(theirs)), rtol=1e-4, atol=1e-4):
                raise ModelError(f"the model's prior and likelihood are not those of {self} "
                                 "(a N(0, prior_std² I) prior and the logistic likelihood σ(y wᵀx))")


def features_and_labels(batch: Any, dim: int) -> tuple[Array, Array]:
    """``(x (B, d), y (B,))`` of a batch pytree ``{"x", "y"}``; :class:`pmd.ModelError` names what is wrong."""
    if not isinstance(batch, dict) or set(batch) != {"x", "y"}:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise ModelError(f"a logistic-regression batch is a dict with keys 'x' and 'y', got {keys}")
    x, y = batch["x"], batch["y"]
    if jnp.ndim(x) != 2 or jnp.shape(x)[1] != dim or jnp.shape(y) != jnp.shape(x)[:1]:
        raise ModelError(f"batch['x'] must be (B, {dim}) and batch['y'] (B,), got {jnp.shape(x)} and {jnp.shape(y)}")
    return x, y


def predictive_log_prob(samples: Array, log_weights: Array, x: Array, y: Array) -> Array:
    """``log p̂(y_j|x_j) = log Σ_i α_i σ(y_j w_iᵀx_j)`` for every test pair: ``(J,)``."""
    log_lik = log_sigmoid(y[None, :] * (samples @ x.T))  # (n, J)
    return logsumexp(normalize(log_weights)[:, None] + log_lik, axis=0)


def predictive_scores(posterior: Posterior, data: dict, key: Array, num_samples: int = 1000) -> dict[str, float]:
    """Test error and mean test log-likelihood of ``posterior``'s predictive (module docstring).

    The predictive is an expectation under the posterior: weighted particles give it exactly, with
    their weights; a posterior with a density (a Gaussian, a KDE, NPV's mixture) by ``num_samples``
    of its own draws, kernels included (:func:`pmd.posterior.own_draws`; never its centres alone).
    A posterior with non-finite samples scores NaN (not a spurious zero error).
    """
    samples, log_w = (own_draws(posterior, key, num_samples) if posterior.has_density()
                      else posterior.weighted_samples(key, num_samples))
    log_p = predictive_log_prob(samples, log_w, jnp.asarray(data["x"]), jnp.asarray(data["y"]))
    error = jnp.where(jnp.any(jnp.isnan(log_p)), jnp.nan, jnp.mean(log_p <= jnp.log(0.5)))
    return {"test_error": float(error), "test_loglik": float(jnp.mean(log_p))}
