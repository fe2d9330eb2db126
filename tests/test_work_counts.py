"""Every method's reported work (the cost on the plots' axis): the runner's curves of raw counts
(``evals``, ``grad_evals`` and the others of :data:`pmd.work.WORK`) against the count derived by
hand from each method's settings and its module docstring's formula, and the curve ``work``, their
sum in units (:data:`pmd.work.UNITS`). Tiny problems, a few steps each.

Where an inner loop adapts (NPV's line search, HMC's leapfrog steps, online VB's E-step), the exact
count is not known from the settings: the test checks the formula's bounds, or ties the count to
another record of the same loop (NPV's ``visited``).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import pmd
from pmd_bench.baselines import NPV, OnePassSMC, StochasticNPV
from pmd_bench.baselines.gibbs import MixtureGibbs, PolyaGammaGibbs
from pmd_bench.baselines.gp import OnePassSMCGP, SubsetOfData, SVIGP
from pmd_bench.baselines.lda import LDASMC, SGRLD, OnlineVB
from pmd_bench.baselines.peers.blackjax_smc import MAX_INTEGRATION_STEPS, DataTemperedSMC, TemperedSMC
from pmd_bench.baselines.peers.blackjax_svgd import BlackJAXSVGD
from pmd_bench.baselines.peers.numpyro_svi import NumPyroSVI
from pmd_bench.baselines.vi.jj_svi import JaakkolaJordanSVI
from baselines_helpers import Conjugate
from lda_helpers import small_corpus
from pmd.models import lda
from pmd.models.logistic import BayesianLogisticRegression, labelled
from pmd.models.mixture import WellingTehMixture
from pmd.rejuvenation import DEFAULT_MOVES
from pmd.work import UNITS, WORK
from pmd.structured import StructuredPMDLDA
from pmd.structured.sparse_gp import StructuredPMDGP
from sparse_gp_helpers import problem

N, B = 20, 5  # rows and batch size of every problem: 4 steps a pass
CONJ = Conjugate.make(num_data=N)


def totals(result) -> tuple[np.ndarray, np.ndarray]:
    """The curves of work, checked finite (the first record, before any step, is 0)."""
    evals, grads = result.curves["evals"], result.curves["grad_evals"]
    assert np.all(np.isfinite(evals)) and np.all(np.isfinite(grads))
    assert evals[0] == 0 and grads[0] == 0 and evals[-1] > 0
    return evals, grads


def per_step(result, passes: float) -> tuple[np.ndarray, np.ndarray]:
    """Each step's work, from the curves recorded after every step (``eval_every=B``)."""
    evals, grads = totals(result)
    assert len(evals) == 1 + math.ceil(passes * N / B)
    return np.diff(evals), np.diff(grads)


def counted(result, name: str) -> np.ndarray:
    """Each step's raw count ``name`` (:data:`pmd.work.WORK`), after checking that the run's curve
    ``work`` charges every count by its unit."""
    charged = sum(UNITS[k] * np.asarray(result.curves[k], np.float64) for k in WORK)
    np.testing.assert_allclose(result.curves["work"], charged, rtol=1e-12)
    return np.diff(result.curves[name])


def run(method, data, passes: float = 1.0, seed: int = 0):
    return pmd.run(method, data, jax.random.key(seed), batch_size=B, num_passes=passes, eval_every=B)


@pytest.mark.slow
def test_one_pass_smc_counts_the_batch_at_every_particle_then_nothing():
    """``B·m`` a step for the pass (Liu-West rejuvenation evaluates nothing, so the resampling
    steps add nothing), 0 for the skipped steps after it."""
    m = 8
    evals, grads = per_step(run(OnePassSMC(CONJ.model, N, m), CONJ.data, passes=2), passes=2)
    np.testing.assert_array_equal(evals, [B * m] * 4 + [0] * 4)
    np.testing.assert_array_equal(grads, 0)


@pytest.mark.slow
def test_npv_counts_every_line_search_call_on_all_rows():
    """``N·calls·m`` evaluations and gradients and ``2d`` times as many Hessian-vector products (the
    Hessian trace and its gradient): the calls of the line search adapt, so the count is tied to
    ``visited`` (``N·calls``) and bounded below by one call per iteration plus the first
    iteration's own (from the prior start, which reads nothing before the first step)."""
    m, d, iterations = 3, 2, 2
    result = run(NPV(CONJ.model, N, m, data=CONJ.data, iterations=iterations, init="prior"), CONJ.data)
    evals, grads = per_step(result, passes=1)
    np.testing.assert_array_equal(evals, grads)
    np.testing.assert_array_equal(evals, result.info["visited"] * m)
    np.testing.assert_array_equal(counted(result, "hvp_evals"), evals * 2 * d)
    assert evals[0] >= N * (iterations + 1) * m
    assert np.all(evals[1:] >= N * iterations * m)


def test_stochastic_npv_counts_one_value_and_gradient_of_the_batch():
    m, d = 3, 2
    result = run(StochasticNPV(CONJ.model, N, m, learning_rate=0.01), CONJ.data)
    evals, grads = per_step(result, passes=1)
    np.testing.assert_array_equal(evals, B * m)
    np.testing.assert_array_equal(grads, B * m)
    np.testing.assert_array_equal(counted(result, "hvp_evals"), B * m * 2 * d)  # a Hessian column is no value


def test_jaakkola_jordan_svi_counts_each_datum_bound_once():
    x = np.random.default_rng(0).normal(size=(N, 1))
    data = labelled(x, np.where(x[:, 0] > 0, 1, -1))
    method = JaakkolaJordanSVI(BayesianLogisticRegression(2, 1.0).model(), N)
    evals, grads = per_step(run(method, data), passes=1)
    np.testing.assert_array_equal(evals, B)
    np.testing.assert_array_equal(grads, 0)


@pytest.mark.slow
def test_gibbs_samplers_count_every_datum_of_every_sweep():
    """``N`` a sweep, whatever the batch (one sweep a step)."""
    mixture = WellingTehMixture()
    x = mixture.simulate(seed=0, n=N)
    evals, grads = per_step(run(MixtureGibbs(mixture.model(), N, 2, data=x, burn_in=1), x), passes=1)
    np.testing.assert_array_equal(evals, N)
    np.testing.assert_array_equal(grads, 0)

    z = np.random.default_rng(0).normal(size=(N, 1))
    data = labelled(z, np.where(z[:, 0] > 0, 1, -1))
    method = PolyaGammaGibbs(BayesianLogisticRegression(2, 1.0).model(), N, 2, data=data, burn_in=1, truncation=4)
    result = run(method, data)
    evals, grads = per_step(result, passes=1)
    np.testing.assert_array_equal(evals, N)
    np.testing.assert_array_equal(grads, 0)
    # the Pólya-Gamma draws and the rows of XᵀΩX are counted (each costs about 100 and 16 values)
    np.testing.assert_array_equal(counted(result, "pg_draws"), N)
    np.testing.assert_array_equal(counted(result, "gram_rows"), N)


def hmc_bounds(moves: np.ndarray, m: int, num_mcmc_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of ``moves`` resample-moves, ``N·(m + Σ L)``, with every ``L`` in ``[1, MAX]``."""
    low = N * m * (1 + num_mcmc_steps) * moves
    return low, N * m * (1 + num_mcmc_steps * MAX_INTEGRATION_STEPS) * moves


@pytest.mark.slow
def test_tempered_smc_counts_its_weights_and_moves_on_all_rows():
    """A stage: ``2·N·m`` evaluations of the weights plus the move's ``N·(m + Σ L)`` gradients,
    ``Σ L`` adapted (bounded), the first stage also the start's ``N·m`` (one round of prior draws:
    the conjugate likelihood is finite everywhere); nothing once ``λ = 1``."""
    m, mcmc = 16, 2
    method = TemperedSMC(CONJ.model, N, m, data=CONJ.data, num_mcmc_steps=mcmc)
    result = run(method, CONJ.data, passes=6)
    evals, grads = per_step(result, passes=6)
    stages = result.info["visited"] > 0
    assert 0 < stages.sum() < len(stages)  # the test sees both kinds of step
    low, high = hmc_bounds(stages, m, mcmc)
    assert np.all((low <= grads) & (grads <= high))
    start = np.zeros(len(stages))
    start[0] = N * m
    np.testing.assert_allclose(evals - grads, 2 * N * m * stages + start, rtol=1e-6)


@pytest.mark.slow
def test_data_tempered_smc_counts_new_rows_and_full_data_moves():
    """A step of the pass: ``m·B`` for the new rows, and for each of its stage moves ``2·N·m``
    evaluations of the weights, the move's gradients (bounded) and ``m·B`` for the rows again at the
    moved particles; after the pass nothing."""
    m, mcmc = 16, 2
    result = run(DataTemperedSMC(CONJ.model, N, m, data=CONJ.data, num_mcmc_steps=mcmc), CONJ.data, passes=1.5)
    evals, grads = per_step(result, passes=1.5)
    reading, moves = result.info["visited"] > 0, result.info["moves"]
    np.testing.assert_array_equal(reading, [True] * 4 + [False] * 2)
    assert moves.any()
    np.testing.assert_array_equal(result.info["resampled"], moves > 0)
    low, high = hmc_bounds(moves, m, mcmc)
    assert np.all((low <= grads) & (grads <= high))
    np.testing.assert_allclose(evals - grads, m * B * (reading + moves) + 2 * N * m * moves, rtol=1e-6)


@pytest.mark.slow
def test_peer_svgd_and_numpyro_svi_count_one_gradient_per_particle_and_row():
    m = 4
    for method in (BlackJAXSVGD(CONJ.model, N, m), NumPyroSVI(CONJ.model, N, m)):
        result = run(method, CONJ.data)
        evals, grads = per_step(result, passes=1)
        np.testing.assert_array_equal(evals, B * m)
        np.testing.assert_array_equal(grads, B * m)
        # BlackJAX's SVGD evaluates its kernel and its gradient at every pair of particles each step
        np.testing.assert_array_equal(counted(result, "kernel_pairs"), m * m if isinstance(method, BlackJAXSVGD) else 0)


@pytest.mark.slow
def test_sparse_gp_methods_count_each_row_per_particle():
    """Closed-form steps: ``B·l`` (structured PMD), ``B`` (SVI), ``s`` once (SoD), ``B·m`` while
    one-pass SMC reads; no gradients."""
    with jax.enable_x64(True):
        model, data = problem(n=N, num_inducing=4)
        l, m = 3, 5
        expected = {StructuredPMDGP(model, N, l): [B * l] * 4, SVIGP(model, N, data=data): [B] * 4,
                    SubsetOfData(model, N, data=data, subset_size=6): [6, 0, 0, 0],
                    OnePassSMCGP(model, N, m, data=data): [B * m] * 4 + [0] * 2}
        for method, counts in expected.items():
            passes = len(counts) * B / N
            evals, grads = per_step(run(method, data, passes=passes), passes=passes)
            np.testing.assert_array_equal(evals, counts)
            np.testing.assert_array_equal(grads, 0)


@pytest.mark.slow
def test_gpjax_svgp_counts_its_differentiated_batch_elbos():
    """GPJax's natural-gradient step differentiates the batch ELBO once (``B`` values and
    gradients); the learned row's Adam step once more (``2B`` of each)."""
    from pmd_bench.baselines.peers.gpjax_sgp import GPJaxSVGP, GPJaxSVGPLearned

    with jax.enable_x64(True):
        model, data = problem(n=N, num_inducing=4)
        for cls, times in ((GPJaxSVGP, 1), (GPJaxSVGPLearned, 2)):
            evals, grads = per_step(run(cls(model, N, data=data), data), passes=1)
            np.testing.assert_array_equal(evals, times * B)
            np.testing.assert_array_equal(grads, times * B)


@pytest.fixture(scope="module")
def corpus() -> dict:
    """The first ``N`` training documents of the LDA tests' corpus."""
    return {name: a[:N] for name, a in small_corpus().train.items()}


@pytest.mark.slow
def test_lda_methods_count_passes_over_each_document(corpus):
    """One pass over a document's tokens at one topic matrix is one evaluation: structured PMD
    ``B·m·(S + 2)`` (``B·m·(S + 1)`` with F.2's closed-form weights, which read no token); SGRLD ``B·(S + 1)`` and ``B`` gradients; online VB ``B·(r + 1)``, ``r`` the
    E-step's rounds (``max_iter`` when ``tol`` is out of reach); SMC ``m·(B + R)`` while it reads."""
    model = lda.LDA(small_corpus().model.num_topics, small_corpus().model.vocabulary)
    m, sweeps, rounds, rejuvenate = 2, 3, 4, 3
    expected = {
        StructuredPMDLDA(model, N, m, sweeps=sweeps, burn_in=1): ([B * m * (sweeps + 2)] * 4, 0),
        StructuredPMDLDA(model, N, m, sweeps=sweeps, burn_in=1, weights="dirichlet_ratio"):
            ([B * m * (sweeps + 1)] * 4, 0),
        SGRLD(model, N, m, sweeps=sweeps, burn_in=1): ([B * (sweeps + 1)] * 4, [B] * 4),
        OnlineVB(model, N, max_iter=rounds, tol=1e-30): ([B * (rounds + 1)] * 4, 0),
        LDASMC(model, N, m, data=corpus, rejuvenate=rejuvenate): ([m * (B + rejuvenate)] * 4 + [0] * 2, 0),
    }
    for method, (counts, gradients) in expected.items():
        passes = len(counts) * B / N
        evals, grads = per_step(run(method, corpus, passes=passes), passes=passes)
        np.testing.assert_array_equal(evals, counts)
        np.testing.assert_array_equal(grads, gradients)


def test_online_vb_rounds_stop_at_convergence(corpus):
    """With a reachable ``tol`` the rounds adapt: ``2B ≤ evals ≤ B·(max_iter + 1)`` a step, and
    once the topics have settled a step stops before ``max_iter``."""
    model = lda.LDA(small_corpus().model.num_topics, small_corpus().model.vocabulary)
    evals, _ = per_step(run(OnlineVB(model, N, max_iter=50, tol=1e-2), corpus), passes=1)
    assert np.all((2 * B <= evals) & (evals <= B * 51)) and evals.min() < B * 51


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sgld", "parallel_sgld", "npl", "svgd"])
def test_gradient_methods_count_the_batch_at_every_point(name):
    """SGLD: the batch's gradient at its one state; parallel SGLD, NPL and SVGD at each of their
    ``m`` points: ``B`` or ``B·m`` of each, every step; SVGD's kernel terms are no likelihood terms,
    but ``m²`` kernel pairs at every move."""
    from pmd_bench.baselines import SGLD, SVGD, ParallelSGLD, PosteriorBootstrap

    m = 3
    method = {"sgld": lambda: SGLD(CONJ.model, N, num_particles=m, a=0.01, burn_in=0),
              "parallel_sgld": lambda: ParallelSGLD(CONJ.model, N, num_particles=m, a=0.01),
              "npl": lambda: PosteriorBootstrap(CONJ.model, N, num_particles=m, learning_rate=0.05),
              "svgd": lambda: SVGD(CONJ.model, N, num_particles=m, step_size=0.01)}[name]()
    result = run(method, CONJ.data)
    evals, grads = per_step(result, 1.0)
    points = 1 if name == "sgld" else m
    np.testing.assert_array_equal(evals, B * points)
    np.testing.assert_array_equal(grads, B * points)
    pairs = np.asarray(result.info["moved"], float) * m * m if name == "svgd" else 0.0
    np.testing.assert_array_equal(counted(result, "kernel_pairs"), pairs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["svi", "sgld", "parallel_sgld", "npl", "svgd"])
def test_laplace_starts_are_counted_once(name):
    """SVI: ``B·S`` values and gradients a step (the ELBO's ``S = 2`` draws); SGLD, parallel SGLD,
    NPL and SVGD at their defaults (step size None with ``data=``): ``B``, or ``B·m`` (``m = 2``). The Laplace start's
    L-BFGS and Hessian reads (``Laplace.work``, the method's ``start_work``) are in the totals from
    the first record, before any step (the start is already the posterior evaluated there), and are
    whole passes over the data (the Hessian's ``d`` Hessian-vector products a try, and at least one
    value and gradient read), read ones each (``visited``)."""
    from pmd_bench.baselines import SGLD, SVGD, SVI, ParallelSGLD, PosteriorBootstrap

    method, points = {"svi": lambda: (SVI(CONJ.model, N, num_particles=2, data=CONJ.data), 2),
                      "sgld": lambda: (SGLD(CONJ.model, N, num_particles=2, burn_in=0, data=CONJ.data), 1),
                      "parallel_sgld": lambda: (ParallelSGLD(CONJ.model, N, 2, data=CONJ.data), 2),
                      "npl": lambda: (PosteriorBootstrap(CONJ.model, N, 2, data=CONJ.data), 2),
                      "svgd": lambda: (SVGD(CONJ.model, N, 2, data=CONJ.data), 2)}[name]()
    result = run(method, CONJ.data)
    start = method.start_work
    assert {name: result.curves[name][0] for name in start} == start
    np.testing.assert_array_equal(np.diff(result.curves["evals"]), B * points)
    np.testing.assert_array_equal(np.diff(result.curves["grad_evals"]), B * points)
    np.testing.assert_array_equal(counted(result, "hvp_evals"), 0)
    assert start["hvp_evals"] == N * CONJ.model.dim  # the Hessian, once: the first try found the mode
    assert start["evals"] % N == 0 and start["grad_evals"] % N == 0 and start["evals"] > start["grad_evals"] >= N
    assert result.visited[0] == start["evals"] + start["hvp_evals"]


@pytest.mark.slow
@pytest.mark.parametrize("rejuvenate", ["auto", {**DEFAULT_MOVES, "first_pass_steps": 2}])
def test_pmd_counts_its_batches_redraws_and_moves(rejuvenate):
    """The paper variant: the batch at its ``m`` particles every step, no gradients. The default:
    the batch at ``m`` particles once per segment plus once per redraw, and each round of ``k``
    moves (``info["mala_moves"]``: ``first_pass_steps`` in a first-pass round, ``steps`` at a pass
    end) ``rows · m · (k + 1)`` values and gradients and ``rows · m · independence`` values
    (:meth:`pmd.rejuvenation.MALAMoves.work`), so its gradients are exactly the moves' and come only
    in steps that moved."""
    m = 8
    paper = run(pmd.PMD(CONJ.model, N, m, variant="paper", strategy="hybrid", kde_steps=2), CONJ.data)
    evals, grads = per_step(paper, 1.0)
    np.testing.assert_array_equal(evals, B * m)
    np.testing.assert_array_equal(grads, 0)
    # a redraw after the first step (which draws from the prior) draws from the KDE of one shared
    # kernel and evaluates it at the m draws: m draws under m centres, and the kernel's triangular
    # solves of the m draws and (twice) of the m centres at d pairs each
    d = CONJ.model.dim
    from_kde = np.asarray(paper.info["redraw"], bool) & (np.arange(4) > 0)
    assert from_kde[1:3].all()  # steps 2 and 3 (t ≤ kde_steps + 1) always do
    np.testing.assert_array_equal(counted(paper, "kde_pairs"), from_kde * (m * m + 3 * m * d))
    default = pmd.PMD(CONJ.model, N, m, data=CONJ.data, rejuvenate=rejuvenate)
    result = run(default, CONJ.data, 2.0)
    evals, grads = per_step(result, 2.0)
    moved = np.asarray(result.info["moved"], bool)
    redraws = np.asarray(result.info["redraws"])
    moves = np.asarray(result.info["mala_moves"])
    np.testing.assert_array_equal(moves[~moved], 0)
    first_pass = B * np.arange(1, len(moves) + 1) < N  # a first-pass round, else a pass end
    np.testing.assert_array_equal(moves[moved], np.where(first_pass, int(default.moves.moves_in(True)),
                                                         default.moves.steps)[moved])
    move_rows = (np.asarray(result.info["visited"]) - B) / default.moves.reads_per_round(moves)
    per_round = move_rows * m * (moves + 1)
    np.testing.assert_allclose(grads, np.where(moved, per_round, 0.0))
    # the preconditioner's Hessian: d Hessian-vector products a row, at one point
    hessian = default.moves.precondition == "hessian"
    np.testing.assert_allclose(counted(result, "hvp_evals"), np.where(moved, hessian * move_rows * CONJ.model.dim, 0.0))
    independence = move_rows * m * default.moves.independence  # values at the sweeps' proposals, no gradients
    np.testing.assert_allclose(evals, (1 + redraws) * B * m + np.where(moved, per_round + independence, 0.0))
    # each redraw's density at its m draws under K clusters' kernels; each independence sweep's two
    # halves, the KDE of m/2 centres at m points (m/2 proposals and m/2 movers)
    k = result.state.kernel.chols.shape[0]
    half = m // 2
    sweeps = np.where(moved, 2 * default.moves.independence * (2 * half * (m - half) + k * (2 * half + 2 * (m - half)) * d),
                      0)
    np.testing.assert_array_equal(counted(result, "kde_pairs"), redraws * (m * m + k * 3 * m * d) + sweeps)
    assert moved.any() and not moved.all()
