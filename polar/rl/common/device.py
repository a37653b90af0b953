"""The RL learner's device (`device: auto|cpu|cuda` in a run config).

The learner (the copy of the policy that PPO, SAC or DQN update, its optimisers, targets and
minibatches) lives on this device; rollouts always act with the CPU policy (serial runs and
every Ray worker), whose weights the trainer refreshes after each update. A rollout step acts
on `num_envs` observations at a time, where a GPU's transfer and launch latency outweigh its
arithmetic, and the numpy rollout fast paths are CPU code.

`auto` picks cuda only where it pays: a GPU is visible and the policy reads pixel images
(the Nature-CNN). Vector and index-grid policies at Polar's sizes train faster on the CPU
through the hand-written fast paths (`analytic_grad`, `fused_adam`, `dqn.fast`), which are
CPU-only; on cuda the learner takes autograd and `torch.optim.Adam(fused=True)` instead.
"""

from __future__ import annotations

import torch

from polar.devices import resolve_device


def learner_device(choice: str, observation_kinds: dict[str, str]) -> torch.device:
    """`choice` for a policy whose observation keys have `observation_kinds`."""
    if choice == "auto":
        wants_gpu = "image" in observation_kinds.values()
        return torch.device(resolve_device("auto") if wants_gpu else "cpu")
    return torch.device(resolve_device(choice, "device"))
