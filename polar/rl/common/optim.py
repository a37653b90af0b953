"""Adam steps without the optimizer's per-call Python.

`torch.optim.Adam(fused=True).step()` spends most of its time at small network sizes in
Python (profiler hooks, state lookup, grouping), not in its one fused kernel. `FusedAdam`
calls that kernel directly with the optimizer's own state tensors, so the arithmetic and
`optimizer.state_dict()` are exactly those of `optimizer.step()` (tested in test_ppo.py).
Anything but one plain fused-Adam group (amsgrad, maximize, capturable, ...), a missing
gradient, or a torch whose private kernel signature changed takes the ordinary path.
"""

from __future__ import annotations

import torch


class FusedAdam:
    def __init__(self, optimizer: torch.optim.Adam, params: list[torch.Tensor]) -> None:
        self.optimizer = optimizer
        self.params = params
        self.enabled = True
        self._state: tuple[list[torch.Tensor], ...] | None = None

    def step(self, clip_grad_norm: float | None = None) -> None:
        """(Clip the global gradient norm, as `clip_grad_norm_` does, then) one Adam step."""
        params = self.params
        grads = [p.grad for p in params]
        if any(g is None for g in grads):
            if clip_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, clip_grad_norm, foreach=True)
            self.optimizer.step()
            return
        if clip_grad_norm is not None:
            total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
            torch._foreach_mul_(grads, torch.clamp(clip_grad_norm / (total + 1e-6), max=1.0))
        state = self._kernel_state()
        if state is None:
            self.optimizer.step()
            return
        exp_avgs, exp_avg_sqs, steps = state
        group = self.optimizer.param_groups[0]
        beta1, beta2 = group["betas"]
        torch._foreach_add_(steps, 1)
        try:
            torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False,
                               lr=group["lr"], beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
                               eps=group["eps"], maximize=False, grad_scale=None, found_inf=None)
        except (TypeError, RuntimeError):
            torch._foreach_sub_(steps, 1)
            self.enabled = False
            self.optimizer.step()

    def _plain_group(self) -> bool:
        group = self.optimizer.param_groups[0]
        return (len(self.optimizer.param_groups) == 1 and group["fused"] and not group["amsgrad"]
                and not group["maximize"] and not group["capturable"] and not group["differentiable"]
                and not group.get("decoupled_weight_decay", False))

    def _kernel_state(self) -> tuple[list[torch.Tensor], ...] | None:
        """The optimizer's state tensors, re-read whenever they are not the cached ones (the
        first step creates them; loading a checkpoint replaces them)."""
        if not self.enabled:
            return None
        first = self.optimizer.state.get(self.params[0])
        if first is None or "exp_avg" not in first:
            return None  # the first step: optimizer.step() creates the state
        if self._state is None or self._state[0][0] is not first["exp_avg"]:
            if not self._plain_group():
                self.enabled = False
                return None
            states = [self.optimizer.state[p] for p in self.params]
            self._state = ([s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                           [s["step"] for s in states])
        return self._state
