"""Pieces shared by the baselines: the retained-sample buffer of the MCMC methods, the
polynomially decaying step size, the Laplace start at a mode of the log joint, and hyperparameter
checks.

Only :mod:`pmd`'s public modules are used, so every baseline has PMD's interface and types.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from pmd.interface import ConfigError, require_choice, require_positive_int
from pmd.model import Model
from pmd.posterior import ParticlePosterior
from pmd.weights import normalize

Array = jax.Array


# -- the retained-sample buffer (SGLD, Gibbs) ----------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SampleBuffer:
    """The last ``m`` retained MCMC samples, a ring: sample ``k`` (0-based) lives in slot ``k mod m``.

    ``count`` is how many samples have been retained in all. Until the first one, the slots hold
    the ``m`` prior draws the method started from (every method starts at ``q̃_1 = p``, Algorithm 1
    line 3 of Dai et al. 2016; SGLD's Laplace start puts draws of its Gaussian there), so the
    posterior of a chain still in burn-in is its initial one.
    """

    samples: Array  # (m, d)
    count: Array  # int32

    @classmethod
    def from_prior(cls, prior_draws: Array) -> "SampleBuffer":
        return cls(samples=prior_draws, count=jnp.asarray(0, jnp.int32))

    def retain(self, sample: Array, keep: Array) -> "SampleBuffer":
        """Write ``sample`` over the oldest slot when ``keep`` (a traced bool), else do nothing."""
        slot = self.count % self.samples.shape[0]
        written = self.samples.at[slot].set(sample)
        return SampleBuffer(
            samples=jnp.where(keep, written, self.samples),
            count=self.count + keep.astype(jnp.int32),
        )

    def posterior(self, discard: float = 0.0) -> ParticlePosterior:
        """The retained samples with equal weights (the prior draws before the first one), less the
        first ``discard`` fraction of all retained so far (a burn-in given as a fraction of the run).

        Slot ``s`` holds sample ``k_s = count - 1 - ((count - 1 - s) mod m)`` (its latest write);
        it is kept when ``floor(discard · count) ≤ k_s``, so at least the latest sample is.
        """
        m = self.samples.shape[0]
        slots = jnp.arange(m)
        index = self.count - 1 - jnp.mod(self.count - 1 - slots, m)
        first = jnp.floor(discard * self.count.astype(jnp.float32)).astype(jnp.int32)
        filled = ((slots < self.count) & (index >= first)) | (self.count == 0)
        log_w = jnp.where(filled, 0.0, -jnp.inf).astype(self.samples.dtype)
        return ParticlePosterior(self.samples, normalize(log_w))


class RetainedChain:
    """One MCMC chain whose posterior is its last ``m`` retained samples (SGLD, both Gibbs samplers).

    Subclasses set ``model``, ``num_particles``, ``_step`` (the jitted transition) and
    ``state_type``: a state pytree built as ``state_type(start, buffer, step)``.
    """

    def init(self, key: Array):
        """The chain starts at a prior draw; the buffer holds ``m`` prior draws until burn-in ends."""
        k_start, k_buffer = jax.random.split(key)
        return self.state_type(
            self.model.sample_prior(k_start, 1)[0],
            SampleBuffer.from_prior(self.model.sample_prior(k_buffer, self.num_particles)),
            jnp.asarray(0, jnp.int32),
        )

    def step(self, key: Array, state, batch: Any) -> tuple[Any, dict]:
        """One transition of the chain (the subclass's ``_step_impl``), after checking the batch."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state) -> ParticlePosterior:
        """The last ``m`` retained samples, equally weighted."""
        return state.buffer.posterior()


def require_burn_in(burn_in: Any, thin: Any, num_steps: Any, *,
                    fraction_ok: bool = False) -> tuple[int | float, int, int | None]:
    """Check an MCMC run's burn-in, thinning and (optional) length.

    ``burn_in`` steps are discarded, then every ``thin``-th state is retained. With ``fraction_ok`` a
    float in ``(0, 1)`` is the fraction of the run discarded instead. When the run length
    ``num_steps`` is known, a burn-in as long as the run (nothing retained) is an error naming both.
    """
    if fraction_ok and isinstance(burn_in, float):
        if not 0.0 < burn_in < 1.0:
            raise ConfigError(f"burn_in as a fraction of the run must lie in (0, 1), got {burn_in!r}")
    elif isinstance(burn_in, bool) or not isinstance(burn_in, int) or burn_in < 0:
        kinds = "a non-negative integer or a fraction in (0, 1)" if fraction_ok else "a non-negative integer"
        raise ConfigError(f"burn_in must be {kinds}, got {burn_in!r}")
    thin = require_positive_int("thin", thin)
    if num_steps is not None:
        num_steps = require_num_steps(burn_in, num_steps)
    return burn_in, thin, num_steps


def require_num_steps(burn_in: int | float, num_steps: Any) -> int:
    """``num_steps`` when an integer ``burn_in`` leaves at least one step of the run, else a
    :class:`ConfigError` naming burn_in, its value and the run's length (a fraction always does)."""
    num_steps = require_positive_int("num_steps", num_steps)
    if isinstance(burn_in, int) and burn_in >= num_steps:
        raise ConfigError(f"burn_in={burn_in} must be shorter than the run, which has {num_steps} steps: no "
                          "sample would be retained and the posterior would be the initial prior draws (give "
                          "burn_in as a fraction of the run, e.g. burn_in=0.5, or run longer)")
    return num_steps


def first_nonfinite(diverged_at: Array, t: Array, position: Array) -> Array:
    """The step at which ``position`` first went non-finite: ``t`` if it is and ``diverged_at`` is
    still -1, else ``diverged_at`` (a jitted step records it; :func:`refuse_diverged` reports it)."""
    return jnp.where((diverged_at < 0) & ~jnp.all(jnp.isfinite(position)), t, diverged_at)


def first_diverged(diverged_at: Array) -> int | None:
    """The first step recorded by :func:`first_nonfinite` (the earliest over a batch of runs), None
    while every state has been finite or inside jit (a tracer has no value to report)."""
    if isinstance(diverged_at, jax.core.Tracer):
        return None
    at = np.asarray(diverged_at)
    return int(np.min(at[at >= 0])) if np.any(at >= 0) else None


def refuse_diverged(method: str, diverged_at: Array, step_size) -> None:
    """Raise ``FloatingPointError`` naming the step and its step size ``step_size(t)`` (None: a
    line-searched method, which has none) if the run recorded a non-finite state: a diverged chain
    has no posterior (checked outside jit only)."""
    t = first_diverged(diverged_at)
    if t is not None:
        if step_size is None:
            raise FloatingPointError(f"{method} diverged: its state went non-finite at step {t} (its line search "
                                     "has no step size to reduce: the objective is non-finite there)")
        raise FloatingPointError(f"{method} diverged: its state went non-finite at step {t}, with step size "
                                 f"{float(step_size(t)):.4g}; take a smaller step size")


# -- step sizes ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolynomialDecay:
    """``ε_t = a (b + t)^(-γ)`` for ``t = 1, 2, ...``.

    SGLD's schedule (Welling & Teh 2011, sec. 3; ``γ ∈ (0.5, 1]`` meets their conditions
    ``Σ ε_t = ∞, Σ ε_t² < ∞``) and the Robbins-Monro learning rate ``ρ_t = (t + τ)^(-κ)`` of SVI
    (Hoffman et al. 2013) scaled by a base rate. ``γ = 0`` is a constant step.
    """

    a: float
    b: float
    gamma: float

    def __call__(self, t):
        return self.a * (self.b + jnp.asarray(t, jnp.float32)) ** (-self.gamma)


def polynomial_decay(names: tuple[str, str, str], a: Any, b: Any, gamma: Any) -> PolynomialDecay:
    """Validate ``a > 0``, ``b ≥ 0``, ``0 ≤ γ ≤ 1`` (reported under the caller's ``names``)."""
    for name, value in zip(names, (a, b, gamma)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{name} must be a number, got {value!r}")
    if not a > 0:
        raise ConfigError(f"the step size {names[0]} must be positive, got {a!r}")
    if not b >= 0:
        raise ConfigError(f"the step-size offset {names[1]} must be non-negative, got {b!r}")
    if not 0 <= gamma <= 1:
        raise ConfigError(f"the step-size decay {names[2]} must lie in [0, 1], got {gamma!r}")
    return PolynomialDecay(float(a), float(b), float(gamma))


OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd}


def stochastic_optimizer(optimizer: Any, learning_rate: Any, tau: Any, kappa: Any, warmup: Any = 0):
    """An optax optimizer with learning rate ``learning_rate · (τ + t)^(-κ)`` (Hoffman et al. 2013),
    or, when ``warmup`` = ``w`` > 0, ``learning_rate · min(t / w, ((τ + t) / (τ + w))^(-κ))``: a
    linear warm-up to ``learning_rate`` at step ``w``, then the same decay (with ``κ = 0.5`` the
    schedule of Vaswani et al., NeurIPS 2017, eq. 3).

    Returns ``(optax transformation, schedule)``; optax counts updates from 0, the schedule from 1.
    """
    if optimizer not in OPTIMIZERS:
        raise ConfigError(f"unknown optimizer {optimizer!r}; expected one of {', '.join(OPTIMIZERS)}")
    decay = polynomial_decay(("learning_rate", "tau", "kappa"), learning_rate, tau, kappa)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ConfigError(f"warmup must be a whole number of steps ≥ 0, got {warmup!r}")
    schedule = decay if warmup == 0 else (lambda t: learning_rate * jnp.minimum(
        jnp.asarray(t, jnp.float32) / warmup, decay(t) / decay(warmup)))
    return OPTIMIZERS[optimizer](lambda count: schedule(count + 1)), schedule


def minibatch_log_joint(model, data_size: int):
    """``θ, batch -> log p(θ) + N · mean_b log p(x_b|θ)``: the unbiased mini-batch estimate of the
    log joint that every stochastic-gradient baseline uses (Welling & Teh 2011, eq. 4)."""

    def log_joint(theta: Array, batch: Any) -> Array:
        per_datum = jax.vmap(model.log_likelihood, in_axes=(None, 0))(theta, batch)
        return model.log_prior(theta) + data_size * jnp.mean(per_datum)

    return log_joint


def require_common(model: Any, data_size: Any, num_particles: Any) -> tuple[Model, int, int]:
    """The arguments every method shares, checked as :class:`pmd.PMD` checks them."""
    if not isinstance(model, Model):
        raise ConfigError(f"model must be a pmd.Model, got {type(model).__name__}")
    return model, require_positive_int("data_size", data_size), require_positive_int("num_particles", num_particles)


def require_full_data(model: Model, data: Any, data_size: int) -> Any:
    """Check the whole data set handed to a full-data method (Gibbs, NPV) against the model."""
    if data is None:
        raise ConfigError("this method scans the whole data set every step: pass it as data=")
    data = jax.tree_util.tree_map(jnp.asarray, data)
    rows = model.check_batch(data)
    if rows != data_size:
        raise ConfigError(f"data has {rows} rows but data_size={data_size}")
    return data


# -- the Laplace start (SVI, SGLD, NPL, SVGD, NPV) -----------------------------------------------
_MEDIAN_DRAWS = (15, 1000)  # NumPyro's init_to_median(num_samples=15); then the prior's median itself


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Laplace:
    """``N(mode, (-∇² log p(θ, x))⁻¹)`` at a mode of the full-data log joint (Bishop 2006, sec. 4.4).

    ``mode`` (d,); ``precision`` ``Λ = -∇²`` there (d, d); ``chol`` the lower Cholesky factor of
    ``Λ⁻¹`` (the covariance); ``work`` what finding it cost; ``conditional_sd`` ``1/sqrt(Λ_kk)``, which is also the mean-field
    KL(q||p) optimum for a Gaussian with precision ``Λ`` (Bishop 2006, eq. 10.12-10.14).
    """

    mode: Array
    precision: Array
    chol: Array
    work: dict  # the counts it took (pmd.work.WORK): L-BFGS's values and gradients with its line search, the Hessian's products

    @property
    def conditional_sd(self) -> Array:
        return 1.0 / jnp.sqrt(jnp.diagonal(self.precision))

    def sample(self, key: Array, n: int) -> Array:
        """``n`` draws ``mode + chol · z``, ``z ~ N(0, I)``: (n, d)."""
        z = jax.random.normal(key, (n, self.mode.shape[0]), dtype=self.mode.dtype)
        return self.mode + z @ self.chol.T


def laplace_approximation(model: Model, data: Any, max_steps: int = 500) -> Laplace:
    """The Laplace approximation at a mode of ``log p(θ) + Σ_n log p(x_n|θ)`` (the whole ``data``).

    The mode: L-BFGS (optax's, with its zoom line search; Nocedal & Wright 2006, Algorithm 7.5) for
    at most ``max_steps`` iterations from the coordinate-wise median of 15 prior draws (NumPyro's
    ``init_to_median``; the draws use the fixed key 0, so the start is deterministic), stopped once
    an iteration no longer decreases ``-log p``. Where that start leads to no mode, L-BFGS starts
    again from the median of 1,000 prior draws, the prior's own median to a few per cent of its
    scale (the centre PyMC's and Stan's starts sit at): 15 draws of a wide prior can start a
    recursion far out (posteriordb's ARMA(1,1): ``μ = -7.5`` and ``|θ| > 1``, where the error
    recursion explodes and L-BFGS ends on a saddle; from the prior's median it finds the mode, within
    0.1 reference sd of the reference mean). The work of every start is counted. NumPyro's ``AutoLaplaceApproximation``
    is the same construction (its mode found by SVI on a delta guide). The Hessian is ``d``
    Hessian-vector products over the data set (one per coordinate, in sequence, so memory stays that
    of one gradient). A Hessian that is not negative definite there (no mode found, or a saddle)
    raises ``FloatingPointError``.
    """
    data_size = model.check_batch(data)
    log_joint = minibatch_log_joint(model, data_size)  # N · mean_n = Σ_n on the whole data set
    calls, failed = np.zeros(3), []
    for draws in _MEDIAN_DRAWS:
        mode, precision, grad_calls, value_calls = _laplace(model, log_joint, data, max_steps, draws)
        calls += (float(grad_calls), float(value_calls), float(model.dim))
        chol_prec = jnp.linalg.cholesky(precision)
        if bool(jnp.all(jnp.isfinite(chol_prec))) and bool(jnp.all(jnp.isfinite(mode))):
            break
        failed.append(f"θ = {np.asarray(mode)} (from the median of {draws} prior draws)")
    else:
        raise FloatingPointError(
            f"no Laplace start for {model.name}: after {max_steps} L-BFGS steps the log joint's Hessian is not "
            f"negative definite (a saddle, or no mode) at " + " and at ".join(failed))
    eye = jnp.eye(model.dim, dtype=precision.dtype)
    cov = jax.scipy.linalg.cho_solve((chol_prec, True), eye)
    reads = {"evals": float(calls[0] + calls[1]) * data_size, "grad_evals": float(calls[0]) * data_size,
             "hvp_evals": float(calls[2]) * data_size}
    return Laplace(mode, precision, jnp.linalg.cholesky(0.5 * (cov + cov.T)), reads)


@partial(jax.jit, static_argnums=(0, 1, 3, 4))
def _laplace(model: Model, log_joint, data: Any, max_steps: int, draws: int) -> tuple[Array, Array, Array, Array]:
    """The L-BFGS mode from the median of ``draws`` prior draws, ``-∇²`` there (the data an argument,
    never a constant of the program), and
    the full-data reads it took: ``(value-and-gradient calls, value-only calls)``, the line
    search's included (the Hessian's ``d`` forward-over-reverse passes are ``d`` Hessian-vector
    products over the data, counted by the caller)."""
    loss = lambda theta: -log_joint(theta, data)  # noqa: E731
    start = jnp.median(model.sample_prior(jax.random.key(0), draws), axis=0)
    solver = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    def body(carry):
        theta, state, _, count, calls = carry
        fresh = ~jnp.isfinite(optax.tree.get(state, "value"))  # no stored value: one extra call
        value, grad = value_and_grad(theta, state=state)
        updates, state = solver.update(grad, state, theta, value=value, grad=grad, value_fn=loss)
        new = optax.apply_updates(theta, updates)
        return new, state, value, count + 1, calls + optax.tree.get(state, "num_linesearch_steps") + fresh

    def more(carry):
        theta, _, previous, count, _ = carry
        return (count < max_steps) & (loss(theta) < previous) & jnp.all(jnp.isfinite(theta))

    init = (start, solver.init(start), jnp.asarray(jnp.inf, start.dtype), jnp.asarray(0), jnp.asarray(0))
    mode, _, _, count, calls = jax.lax.while_loop(more, body, init)
    grad = jax.grad(loss)
    hessian = jax.lax.map(lambda v: jax.jvp(grad, (mode,), (v,))[1], jnp.eye(model.dim, dtype=mode.dtype))
    return mode, 0.5 * (hessian + hessian.T), calls, count + 1


INITS = ("laplace", "prior")


def resolve_init(init: Any, step: Any) -> str:
    """The start of a method whose step-size-like setting has the value ``step``: ``init`` when
    given, else ``"laplace"`` when ``step`` is None (the default, set from the model) and
    ``"prior"`` when the user set it (the method as it was before its default came from the model)."""
    if init is None:
        return "laplace" if step is None else "prior"
    return require_choice("init", init, INITS)


def laplace_start(method: str, setting: str, model: Model, data: Any, data_size: int) -> Laplace:
    """:func:`laplace_approximation` on the whole ``data``, or a :class:`ConfigError` saying that
    ``method``'s default ``setting`` needs it when ``data`` is None (no guessed scale)."""
    if data is None:
        raise ConfigError(f"{method}'s default {setting}=None is set from the posterior's curvature at its mode, "
                          "which needs the data set: pass the whole data set as data= (read once, at construction), "
                          f"or a step size {setting}=")
    return laplace_approximation(model, require_full_data(model, data, data_size))
