"""The index-grid encoder takes every grid size MiniGrid shows: 7x7 views and full grids."""

from __future__ import annotations

import pytest
import torch

from polar.rl.networks import GridEncoder


@pytest.mark.parametrize("side", [4, 5, 6, 7, 8, 16])
def test_grid_encoder_takes_every_side(side: int) -> None:
    enc = GridEncoder((side, side, 3), vocab=16, embed=4)
    out = enc(torch.randint(0, 11, (2, side, side, 3)))
    assert out.shape == (2, enc.out_dim) and enc.out_dim > 0


def test_seven_by_seven_views_keep_their_shape() -> None:
    # the shipped policies' 7x7 views: conv 6x6, pool 3x3, conv 2x2, conv 1x1 -> 64 features
    assert GridEncoder((7, 7, 3), vocab=16, embed=4).out_dim == 64
