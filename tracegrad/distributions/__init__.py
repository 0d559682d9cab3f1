"""``tg.distributions`` (PyTorch's ``torch.distributions``): the distributions, with PyTorch's
formulas, argument checks and shapes (``batch_shape``, ``event_shape``), ``constraints``,
``transforms`` with ``TransformedDistribution``, ``biject_to``/``transform_to``, and
``kl_divergence`` for the pairs PyTorch registers (dispatched as PyTorch's, with its warning
when two registrations tie). The ``ExponentialFamily`` members also have PyTorch's natural
parameters and log normalizers, from which the generic entropy and the KL between two members
of one family without a closed form (Wishart's) follow by autograd.

``log_prob``, ``entropy``, the moments and ``sample``/``rsample`` differentiate and compile:
the location-scale families, Uniform, Exponential, the multivariate normals and the
distributions made of them by transforms draw their noise from the seeded ``uniform_noise`` op
(a compiled program takes a fresh seed each call, as dropout). The discrete and gamma families
(with Wishart's chi2 diagonal and LKJCholesky's Beta draws) draw eagerly with NumPy (a compiled
function breaks its graph there, with a warning); the gamma family's ``rsample`` has PyTorch's
implicit reparametrization gradients (gamma_sampling.py).

>>> import tracegrad as tg
>>> p, q = tg.distributions.Normal(0.0, 1.0), tg.distributions.Normal(1.0, 1.0)
>>> tg.distributions.kl_divergence(p, q)
tensor(0.5000)
"""
from . import constraints  # (tg.distributions.constraints, as PyTorch's)
from . import transforms
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import Bernoulli, Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .discrete_counts import Binomial, Geometric, Multinomial, NegativeBinomial
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .generalized_pareto import GeneralizedPareto
from .gamma_family import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, Poisson, StudentT
from .kl import kl_divergence, register_kl
from .lkj_cholesky import LKJCholesky
from .low_rank import LowRankMultivariateNormal
from .mixture import MixtureSameFamily
from .multivariate import Independent, MultivariateNormal
from .relaxed import RelaxedBernoulli, RelaxedOneHotCategorical
from .transformed import Gumbel, HalfCauchy, HalfNormal, LogNormal, Pareto, TransformedDistribution, Weibull
from .transformed_families import InverseGamma, Kumaraswamy, LogisticNormal
from .von_mises import VonMises
from .wishart import Wishart
# (the transforms at the top level too, as PyTorch's)
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform,
                         LowerCholeskyTransform, PositiveDefiniteTransform, PowerTransform, ReshapeTransform,
                         SigmoidTransform, SoftplusTransform, TanhTransform, SoftmaxTransform, StackTransform,
                         StickBreakingTransform, Transform, identity_transform)
from .transforms import __all__ as _transforms_all
from . import kl, kl_cross, kl_same_kind as kl_more  # (register their pairs)

__all__ = ["Distribution", "ExponentialFamily", "Normal", "Uniform", "Laplace", "Cauchy", "Exponential", "Bernoulli", "Categorical",
           "OneHotCategorical", "MultivariateNormal", "Independent", "Gamma", "Chi2", "Beta", "Dirichlet",
           "Poisson", "StudentT", "TransformedDistribution", "LogNormal", "HalfNormal", "HalfCauchy", "Gumbel",
           "Weibull", "Pareto", "Binomial", "Geometric", "Multinomial", "NegativeBinomial", "LowRankMultivariateNormal", "MixtureSameFamily",
           "OneHotCategoricalStraightThrough", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ContinuousBernoulli",
           "VonMises", "GeneralizedPareto", "Wishart", "LKJCholesky", "FisherSnedecor", "InverseGamma", "Kumaraswamy", "LogisticNormal",
           "kl_divergence", "register_kl", "biject_to", "transform_to"] + _transforms_all
