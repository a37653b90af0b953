"""Which torch device a `device: auto|cpu|cuda` setting means (planner fine-tuning, the RL learner)."""

from __future__ import annotations

from typing import Literal

from polar.errors import ConfigError

DeviceChoice = Literal["auto", "cpu", "cuda"]


def resolve_device(choice: str, field: str = "--device") -> str:
    """`auto`: cuda where torch sees a GPU, else cpu; `cuda` with no GPU visible is an error
    naming `field` (the flag or config key the choice came from)."""
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if choice not in ("cpu", "cuda"):
        raise ConfigError(f"{field}: {choice!r} is not one of auto, cpu, cuda")
    if choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{field} cuda: no CUDA GPU is visible to torch")
    return choice
