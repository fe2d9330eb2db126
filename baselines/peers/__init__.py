"""The peers a user would pick instead of PMD, from the libraries they would pick them from.

Each wraps one library's implementation behind pmd-bench's interface (``Method(model,
data_size=N, num_particles=m, **hyperparameters)``, ``init``, a pure jitted ``step``,
``posterior``), one module per library:

* :mod:`.blackjax_smc`: BlackJAX's adaptive tempered SMC on the full data
  (:class:`TemperedSMC`) and its data-tempered SMC over partial posteriors
  (:class:`DataTemperedSMC`);
* :mod:`.numpyro_svi`: NumPyro's SVI with a full-rank Gaussian guide (:class:`NumPyroSVI`);
* :mod:`.blackjax_svgd`: BlackJAX's SVGD (:class:`BlackJAXSVGD`), the peer of :class:`baselines.vi.SVGD`.
"""

from .blackjax_smc import DataTemperedSMC, DataTemperingState, TemperedSMC, TemperingState
from .blackjax_svgd import BlackJAXSVGD
from .numpyro_svi import NumPyroSVI, NumPyroSVIState

__all__ = ["TemperedSMC", "TemperingState", "DataTemperedSMC", "DataTemperingState", "NumPyroSVI",
           "NumPyroSVIState", "BlackJAXSVGD"]
