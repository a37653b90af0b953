"""`masked_lstm` must give what a loop of `LSTMCell` gives, outputs and every gradient."""

import pytest
import torch

from polar.rl.common.lstm import masked_lstm


def _loop(cell, x, h, c, starts):
    outs = []
    for t in range(x.shape[0]):
        keep = (~starts[t]).unsqueeze(-1).to(h.dtype)
        h, c = cell(x[t], (h * keep, c * keep))
        outs.append(h)
    return torch.stack(outs)


def _outputs_and_grads(fn, cell, x, h0, c0, starts, grad):
    leaves = [x, h0, c0, *cell.parameters()]
    for p in leaves:
        p.grad = None
    out = fn(cell, x, h0, c0, starts)
    out.backward(grad)
    return [out.detach().clone(), *(p.grad.clone() for p in leaves)]


@pytest.mark.parametrize("reset_rate", [0.0, 0.1, 1.0])  # never, sometimes (step 0 too), every step
@pytest.mark.parametrize("bias", [True, False])
def test_matches_the_unrolled_cell(reset_rate, bias):
    torch.manual_seed(0)
    T, N, inp, H = 40, 3, 5, 7
    cell = torch.nn.LSTMCell(inp, H, bias=bias).double()
    x = torch.randn(T, N, inp, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(N, H, dtype=torch.float64, requires_grad=True)
    c0 = torch.randn(N, H, dtype=torch.float64, requires_grad=True)
    starts = torch.rand(T, N) < reset_rate
    starts[0, 0] = reset_rate > 0
    grad = torch.randn(T, N, H, dtype=torch.float64)
    want = _outputs_and_grads(_loop, cell, x, h0, c0, starts, grad)
    got = _outputs_and_grads(masked_lstm, cell, x, h0, c0, starts, grad)
    names = ["h", "x", "h0", "c0", *(n for n, _ in cell.named_parameters())]
    for name, a, b in zip(names, got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)
    if reset_rate == 1.0:  # every step forgets: nothing flows back to the first memory
        assert got[2].abs().max() == 0 and got[3].abs().max() == 0


def test_gradcheck():
    torch.manual_seed(1)
    cell = torch.nn.LSTMCell(3, 4).double()
    x = torch.randn(6, 2, 3, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    c0 = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    starts = torch.zeros(6, 2, dtype=torch.bool)
    starts[3, 1] = True
    assert torch.autograd.gradcheck(lambda *a: masked_lstm(cell, *a, starts), (x, h0, c0))
