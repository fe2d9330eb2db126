"""BlackJAX's SVGD (``blackjax.svgd``) behind pmd-bench's interface: the peer of
:class:`baselines.vi.SVGD` with ``batch_growth=0``.

Same algorithm and settings as ours: Liu & Wang's (2016) Algorithm 1 with the RBF kernel
``exp(-‖θ - θ'‖²/h)``, the median heuristic ``h = med²/log m`` (BlackJAX's
``update_median_heuristic``, applied to the initial particles and after every step, so each step
uses the bandwidth of the particles it moves, as ours does), the same optax optimizer and step
size, and the score of the mini-batch log joint ``log p(θ) + N · mean_b log p(x_b|θ)``. One
``step`` is one BlackJAX step on the runner's batch. Same answers from the same particles and
batches is what ``tests/test_baselines_svgd.py`` checks; the speed ratio is
``benchmarks/bench_particle_methods.py``'s.

Work (:func:`pmd.interface.work`): a step takes the gradient of the mini-batch log joint at every
particle, ``B·m`` gradients and evaluations. BlackJAX writes that gradient inside the double
``vmap`` over particle pairs, but it depends on one particle only, so ``vmap`` leaves it unbatched
along the other axis: ``m`` gradients, not ``m²``. The kernel and its gradient at every pair are
``m²`` ``kernel_pairs`` a step.
"""

from __future__ import annotations

from typing import Any

import blackjax
import jax
from blackjax.vi.svgd import SVGDState, update_median_heuristic

from pmd.interface import work
from pmd.posterior import ParticlePosterior

from .._common import minibatch_log_joint, require_common
from ..vi.svgd import SVGD

Array = jax.Array


class BlackJAXSVGD:
    """``blackjax.svgd`` on mini-batches; arguments as :class:`baselines.vi.SVGD` (``batch_growth``
    and ``repulsion`` are not BlackJAX options: plain SVGD)."""

    method_family = "particle VI"
    reference = "BlackJAX `blackjax.svgd` (Liu & Wang, NeurIPS 2016)"

    def __init__(self, model, data_size: int, num_particles: int = 100, step_size: float = 0.01,
                 optimizer: str = "sgd"):
        # ours validates the shared arguments and builds the same optax optimizer
        ours = SVGD(model, data_size, num_particles, step_size=step_size, optimizer=optimizer)
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.optimizer = ours.optimizer
        log_joint = minibatch_log_joint(self.model, self.data_size)
        self._svgd = blackjax.svgd(lambda theta, batch: jax.grad(log_joint)(theta, batch), self.optimizer)
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> SVGDState:
        """``m`` prior draws (the same draws as :class:`baselines.vi.SVGD` from the same key)."""
        return update_median_heuristic(self._svgd.init(self.model.sample_prior(key, self.num_particles)))

    def step(self, key: Array, state: SVGDState, batch: Any) -> tuple[SVGDState, dict]:
        """One BlackJAX SVGD step on the batch."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: SVGDState) -> ParticlePosterior:
        """The particles, equally weighted."""
        return ParticlePosterior.equally_weighted(state.particles)

    def _step_impl(self, key: Array, state: SVGDState, batch: Any) -> tuple[SVGDState, dict]:
        grads = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles
        return self._svgd.step(state, batch=batch), {"length_scale": state.kernel_parameters["length_scale"],
                                                     **work(grads, grads, kernel_pairs=self.num_particles ** 2)}
