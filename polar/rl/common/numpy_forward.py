"""An MLP's forward pass in numpy, for rollout steps.

A rollout step runs a policy on a handful of observations (one per env). At that size a torch
op costs its dispatch, several microseconds; a numpy op about one. These helpers read views of
the parameters (no copies, current while an optimizer updates the weights in place). Batches
above `MAX_BATCH`, where the ops' arithmetic outweighs their dispatch, stay in torch.
"""

from __future__ import annotations

import numpy as np
from torch import nn

MAX_BATCH = 64


def mlp_numpy(h: np.ndarray, trunk: nn.Sequential, relu: bool) -> np.ndarray:
    """`trunk(h)` for an `mlp` (Linear layers and their activations): tanh, or ReLU if `relu`."""
    for layer in trunk:
        if isinstance(layer, nn.Linear):
            h = h @ layer.weight.detach().numpy().T
            h += layer.bias.detach().numpy()
        elif relu:
            np.maximum(h, 0, out=h)
        else:
            np.tanh(h, out=h)
    return h
