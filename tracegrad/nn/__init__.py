"""Neural-network building blocks (PyTorch's ``torch.nn``): Module, Parameter, layers, losses,
``tg.nn.functional`` and ``tg.nn.init``.

>>> import tracegrad as tg
>>> _ = tg.manual_seed(0)
>>> model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.GELU(), tg.nn.Linear(8, 3))
>>> loss = tg.nn.CrossEntropyLoss()(model(tg.randn(5, 4)), tg.tensor([0, 1, 2, 0, 1]))
>>> loss.backward()
>>> model[0].weight.grad.shape
tracegrad.Size([8, 4])
"""
from . import attention, functional, init, utils
from .modules.activation import ELU, GLU, Hardtanh, LeakyReLU, LogSigmoid, Mish, SiLU, Softplus, Softsign
from .modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm
from .modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .modules.conv import (AvgPool1d, AvgPool2d, AvgPool3d, Conv1d, Conv2d, Conv3d, ConvTranspose2d,
                           ConvTranspose3d, MaxPool1d, MaxPool2d, MaxPool3d)
from .modules.basic import (GELU, Dropout, Embedding, Flatten, Identity, LayerNorm, Linear, LogSoftmax, ReLU,
                            Sigmoid, Softmax, Tanh, Unflatten)
from .modules.loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, CTCLoss, HuberLoss, L1Loss, MSELoss,
                           MultiLabelMarginLoss, MultiMarginLoss, NLLLoss, SmoothL1Loss,
                           TripletMarginWithDistanceLoss)
from .modules.activations_and_resampling import (LAYERS_MORE, CELU, SELU, AdaptiveAvgPool1d,
                                                 AdaptiveAvgPool2d, AdaptiveAvgPool3d, CosineEmbeddingLoss,
                                                 CosineSimilarity, Dropout2d, GaussianNLLLoss, Hardshrink,
                                                 Hardsigmoid, Hardswish, HingeEmbeddingLoss, InstanceNorm1d,
                                                 InstanceNorm2d, InstanceNorm3d, KLDivLoss, MarginRankingLoss,
                                                 MultiLabelSoftMarginLoss, PairwiseDistance, PixelShuffle,
                                                 PixelUnshuffle, PoissonNLLLoss, PReLU, ReLU6, Softmin,
                                                 SoftMarginLoss, Softshrink, Tanhshrink, Threshold,
                                                 TripletMarginLoss, Upsample)
from .modules.norms_and_dropouts import (LAYERS_EXTRA, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
                                         AdaptiveMaxPool3d, AlphaDropout, Bilinear, ChannelShuffle,
                                         ConvTranspose1d, Dropout1d, Dropout3d, EmbeddingBag,
                                         FeatureAlphaDropout, Fold, LocalResponseNorm, LPPool1d, LPPool2d,
                                         LPPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, RMSNorm, RReLU,
                                         Softmax2d, Unfold, UpsamplingBilinear2d, UpsamplingNearest2d)
from .modules.lazy import (LAZY_MODULES, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d,
                           LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                           LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,
                           LazyLinear)
from .modules.adaptive import AdaptiveLogSoftmaxWithLoss
from .modules.compat import Buffer, Container, DataParallel, NLLLoss2d, SyncBatchNorm
from .modules.linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions
from .modules.cross_map_lrn import CrossMapLRN2d
from .modules.fractional import FractionalMaxPool2d, FractionalMaxPool3d
from .modules.module import Module
from .modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .modules.transformer import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .modules.transformer_decoder import Transformer, TransformerDecoder, TransformerDecoderLayer
from .modules.padding import (PADDING_MODULES, CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d,
                              ConstantPad2d, ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d,
                              ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
                              ZeroPad3d)
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["attention", "functional", "init", "utils", "Module", "Parameter", "UninitializedParameter",
           "UninitializedBuffer", "Sequential", "ModuleList",
           "ModuleDict", "ParameterList", "ParameterDict", "Linear", "Identity", "Flatten", "Unflatten",
           "ReLU", "Tanh", "Sigmoid", "GELU", "SiLU", "Softplus", "LeakyReLU", "ELU", "Mish",
           "Hardtanh", "LogSigmoid", "Softsign", "GLU", "Softmax", "LogSoftmax", "Dropout", "LayerNorm",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "Embedding", "Conv1d", "Conv2d",
           "Conv3d", "ConvTranspose2d", "ConvTranspose3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "CTCLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
           "TripletMarginWithDistanceLoss", *PADDING_MODULES, *LAYERS_MORE, *LAYERS_EXTRA, "RNN",
           "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention",
           "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer", *LAZY_MODULES, "Buffer", "Container", "DataParallel",
           "NLLLoss2d", "SyncBatchNorm", "RNNBase", "RNNCellBase", "AdaptiveLogSoftmaxWithLoss",
           "LinearCrossEntropyLoss", "LinearCrossEntropyOptions",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "CrossMapLRN2d"]


def __getattr__(name):
    # Start-up time (docs/performance.md): tg.nn.parallel (DistributedDataParallel) loads on
    # first use, as ``import tracegrad.nn.parallel`` would (PEP 562).
    if name == "parallel":
        import importlib

        return importlib.import_module(".parallel", __name__)
    raise AttributeError(f"module 'tracegrad.nn' has no attribute '{name}'")
