"""An LSTM over a rollout's sequences, reset where episodes start, with a hand-written backward.

Recurrent PPO re-runs its `torch.nn.LSTMCell` over each minibatch of env columns ([T, N],
memory zeroed where an episode starts). Unrolled through autograd that is ~20 graph nodes per
time step on tensors of a few envs, most of recurrent PPO's update. `masked_lstm` runs the
same recurrence with the gradient of every step written out (the bulk terms computed once over
the whole sequence): ~8 small ops a step each way. The same maths as `LSTMCell` (gates i, f, g, o; float rounding aside):
`tests/rl/common/test_lstm.py` checks outputs and every gradient against the unrolled cell, and
`benchmarks/lstm_bench.py` measures the two side by side.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


class _MaskedLSTM(torch.autograd.Function):
    """h[t] for pre-computed input gates `xg` [T, N, 4H] (x W_ih^T + b_ih + b_hh), first memory
    (h0, c0) [N, H], `keep` [T, N, 1] (0 where the memory is reset before step t), W_hh [4H, H].
    `resets` lists the steps where some env resets: only those are masked."""

    @staticmethod
    def forward(ctx, xg: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, keep: torch.Tensor,
                w_hh: torch.Tensor, resets: frozenset[int]) -> torch.Tensor:
        T, N, G = xg.shape
        H = G // 4
        hs, cs, tcs = (xg.new_empty(T, N, H) for _ in range(3))  # h, c and tanh(c) per step
        acts = xg.new_empty(T, N, G)  # i, f, o after their sigmoid, g after its tanh
        w_t = w_hh.t()
        h, c = h0, c0
        for t in range(T):
            if t in resets:
                h, c = h * keep[t], c * keep[t]
            a = acts[t]
            gates = torch.addmm(xg[t], h, w_t)
            torch.sigmoid(gates, out=a)
            torch.tanh(gates[:, 2 * H:3 * H], out=a[:, 2 * H:3 * H])
            i, f, g, o = a.chunk(4, 1)
            c = torch.addcmul(f * c, i, g, out=cs[t])
            h = torch.mul(o, torch.tanh(c, out=tcs[t]), out=hs[t])
        # The memory each step started from, as it entered the cell (masked where reset).
        h_in = torch.cat((h0[None], hs[:-1])).mul_(keep)
        c_in = torch.cat((c0[None], cs[:-1])).mul_(keep)
        ctx.resets = resets
        ctx.save_for_backward(acts, h_in, c_in, tcs, keep, w_hh)
        return hs

    @staticmethod
    def backward(ctx, grad_hs: torch.Tensor):  # type: ignore[override]
        acts, h_in, c_in, tc, keep, w_hh = ctx.saved_tensors
        resets = ctx.resets
        T, N, G = acts.shape
        H = G // 4
        i, f, g, o = acts.chunk(4, -1)
        dc_from_dh = o * (1 - tc * tc)  # dc[t] += dh[t] * this
        # d(pre-activation gates) = (dc, dc, dc, dh) * scale
        scale = torch.cat((g * i * (1 - i), c_in * f * (1 - f), i * (1 - g * g), tc * o * (1 - o)), -1)
        dgates = torch.empty_like(acts)
        dh_next = grad_hs.new_zeros(N, H)
        dc_next = grad_hs.new_zeros(N, H)
        for t in range(T - 1, -1, -1):
            dh = grad_hs[t] + dh_next
            dc = torch.addcmul(dc_next, dh, dc_from_dh[t])
            torch.cat((dc, dc, dc, dh), 1, out=dgates[t]).mul_(scale[t])
            dh_next = torch.mm(dgates[t], w_hh)
            dc_next = dc.mul_(f[t])
            if t in resets:
                dh_next.mul_(keep[t])
                dc_next.mul_(keep[t])
        grad_w = torch.mm(dgates.reshape(T * N, G).t(), h_in.reshape(T * N, H)) if ctx.needs_input_grad[4] else None
        return dgates, dh_next, dc_next, None, grad_w, None


def masked_lstm(cell: torch.nn.LSTMCell, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor,
                starts: torch.Tensor) -> torch.Tensor:
    """`cell` over `x` [T, N, in] from memory (h0, c0) [N, H], the memory zeroed before every
    step where `starts` [T, N] is True: the outputs h [T, N, H], as a loop of `cell` gives them."""
    bias = None
    if cell.bias:
        bias = cell.bias_ih + cell.bias_hh
    xg = F.linear(x, cell.weight_ih, bias)
    keep = (~starts).unsqueeze(-1).to(x.dtype)
    resets = frozenset(torch.nonzero(starts.any(1)).flatten().tolist())
    return _MaskedLSTM.apply(xg, h0, c0, keep, cell.weight_hh, resets)
