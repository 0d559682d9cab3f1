"""``tg.distributions`` (PyTorch's ``torch.distributions``, a subset): ``Normal``, ``Uniform``,
``Laplace``, ``Exponential``, ``Bernoulli``, ``Categorical``, ``OneHotCategorical``,
``MultivariateNormal``, ``Independent``, ``Gamma``, ``Chi2``, ``Beta``, ``Dirichlet``,
``Poisson``, ``StudentT`` and ``kl_divergence`` between them; PyTorch's formulas, argument
checks and shapes (``batch_shape``, ``event_shape``).

``log_prob``, ``entropy``, the moments and ``sample``/``rsample`` differentiate and compile:
the location-scale families, Uniform, Exponential and MultivariateNormal draw their noise from
the seeded ``uniform_noise`` op (a compiled program takes a fresh seed each call, as dropout).
The discrete and gamma families draw eagerly with NumPy (a compiled function breaks its graph
there, with a warning); the gamma family's ``rsample`` has PyTorch's implicit reparametrization
gradients (gamma_sampling.py).

>>> import tracegrad as tg
>>> p, q = tg.distributions.Normal(0.0, 1.0), tg.distributions.Normal(1.0, 1.0)
>>> tg.distributions.kl_divergence(p, q)
tensor(0.5000)
"""
from . import constraints  # noqa: F401  (tg.distributions.constraints, as PyTorch's)
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .gamma_family import Beta, Chi2, Dirichlet, Gamma, Poisson, StudentT
from .kl import kl_divergence, register_kl
from .multivariate import Independent, MultivariateNormal
from . import kl  # noqa: F401

__all__ = ["Distribution", "Normal", "Uniform", "Laplace", "Exponential", "Bernoulli", "Categorical",
           "OneHotCategorical", "MultivariateNormal", "Independent", "Gamma", "Chi2", "Beta", "Dirichlet",
           "Poisson", "StudentT", "kl_divergence", "register_kl"]
