"""grad_fn names as PyTorch's (issue 25): ``y.grad_fn.name()`` of common expressions, compared with
torch's. Names come from the primitive (``OpNode.name``) or, for composites and PyTorch's
overloads, from ``named_backward`` (autograd/graph.py)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tracegrad  # noqa: E402
import tracegrad.nn.functional as TF  # noqa: E402

EXPRESSIONS = [
    'x.view(12)',
    'x.view(-1, 2)',
    'x.reshape(12)',
    'x.reshape(2, 6)',
    'x.flatten()',
    'torch.flatten(x)',
    'x.transpose(0, 1)',
    'x.t()',
    'x.T',
    'x.permute(1, 0)',
    'x.unsqueeze(0)',
    'x.squeeze()',
    'x[:, :1].squeeze(1)',
    'x.unsqueeze(0).expand(2, 3, 4)',
    'x.expand_as(y)',
    'x.sum()',
    'x.sum(0)',
    'x.sum(dim=1, keepdim=True)',
    'x.mean()',
    'x.mean(1)',
    'x.max()',
    'x.max(0)[0]',
    'x.amax(1)',
    'x.prod()',
    'x * y',
    'x * 2',
    'x + y',
    'x + 1',
    'x - y',
    'x / y',
    'x / 2',
    'x ** 2',
    'x.exp()',
    'x.log()',
    'x.tanh()',
    'x.sigmoid()',
    'x.relu()',
    'F.relu(x)',
    'torch.sigmoid(x)',
    'x.abs()',
    'x.sqrt()',
    '-x',
    'x.neg()',
    'x.clamp(min=0)',
    'x.pow(y)',
    'torch.cat([x, y])',
    'torch.stack([x, y])',
    'x[0]',
    'x[:, 1]',
    'x[1:]',
    'x[idx]',
    'x.gather(1, gidx)',
    'x.select(0, 1)',
    'x.narrow(0, 0, 2)',
    'x.split(2, 1)[0]',
    'x.chunk(2, 1)[1]',
    'x @ w',
    'x.mm(w)',
    'torch.matmul(x, w)',
    'F.linear(x, w.t())',
    'F.linear(x, w.t(), b)',
    'F.linear(x3, w.t(), b)',
    'F.linear(x3, w.t())',
    'F.softmax(x, 1)',
    'F.log_softmax(x, 1)',
    'F.gelu(x)',
    'F.silu(x)',
    'F.dropout(x, 0.0)',
    'F.layer_norm(x, (4,))',
    'F.conv2d(img, k)',
    'F.conv2d(img, k, kb)',
    'F.max_pool2d(img, 2)',
    'F.avg_pool2d(img, 2)',
    'F.embedding(idx, x)',
    'F.mse_loss(x, y)',
    'F.cross_entropy(x, tgt)',
    'x.contiguous()',
    'x.t().contiguous()',
    'x.clone()',
    'x.masked_fill(x > 0, 0.)',
    'torch.where(x > 0, x, y)',
    'x.cumsum(1)',
    'x.var()',
    'x.std(1)',
    'x.repeat(2, 1)',
    'x.float()',
    'x.detach().requires_grad_().flip(0)',
    'x.roll(1, 0)',
    'x.sin()',
    'x.cos()',
]


def grad_fn_name(torch, F, expression):
    x = torch.randn(3, 4, requires_grad=True)
    y = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 5, requires_grad=True)
    b = torch.randn(5, requires_grad=True)
    x3 = torch.randn(2, 3, 4, requires_grad=True)
    img = torch.randn(1, 2, 6, 6, requires_grad=True)
    k = torch.randn(3, 2, 3, 3, requires_grad=True)
    kb = torch.randn(3, requires_grad=True)
    idx, gidx, tgt = torch.tensor([0, 2]), torch.tensor([[0], [1], [2]]), torch.tensor([0, 1, 3])
    names = dict(torch=torch, F=F, x=x, y=y, w=w, b=b, x3=x3, img=img, k=k, kb=kb, idx=idx, gidx=gidx, tgt=tgt)
    node = eval(expression, names).grad_fn
    return None if node is None else node.name()


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_grad_fn_name_as_torch(expression):
    assert grad_fn_name(tracegrad, TF, expression) == grad_fn_name(torch, torch.nn.functional, expression)


# Known differences, not yet named as PyTorch's: index_select (IndexBackward0), norm (the
# composite's last op), adaptive_avg_pool2d to 1x1 (PyTorch: MeanBackward1), .double()
# (CastBackward0; PyTorch: ToCopyBackward0).
@pytest.mark.xfail(strict=True, reason="not yet named as PyTorch's (issue 25)")
@pytest.mark.parametrize("expression", ["x.index_select(0, idx)", "x.norm()", "F.adaptive_avg_pool2d(img, 1)",
                                        "x.double()"])
def test_grad_fn_name_known_differences(expression):
    test_grad_fn_name_as_torch(expression)
