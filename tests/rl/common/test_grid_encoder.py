"""The index-grid encoder takes every grid size MiniGrid shows: 7x7 views and full grids."""

from __future__ import annotations

import pytest
import torch

from polar.rl.common.networks import GridEncoder


@pytest.mark.parametrize("side", [4, 5, 6, 7, 8, 16])
def test_grid_encoder_takes_every_side(side: int) -> None:
    enc = GridEncoder((side, side, 3), vocab=16, embed=4)
    out = enc(torch.randint(0, 11, (2, side, side, 3)))
    assert out.shape == (2, enc.out_dim) and enc.out_dim > 0


def test_seven_by_seven_views_keep_their_shape() -> None:
    # the shipped policies' 7x7 views: conv 6x6, pool 3x3, conv 2x2, conv 1x1 -> 64 features
    assert GridEncoder((7, 7, 3), vocab=16, embed=4).out_dim == 64


def test_the_lookup_and_its_gradient_are_nn_embeddings() -> None:
    # GridEncoder looks its embeddings up through _Embedding (a faster backward): the same
    # features and the same gradients as self.embed(idx), ids beyond the vocabulary included.
    torch.manual_seed(0)
    enc = GridEncoder((8, 8, 3), vocab=16, embed=4).double()
    x = torch.randint(0, 20, (5, 8, 8, 3))
    results = []
    for reference in (False, True):
        enc.zero_grad()
        if reference:
            idx = x.long().clamp(0, enc.vocab - 1) + enc.offsets
            out = enc.cnn(enc.embed(idx).flatten(3).permute(0, 3, 1, 2))
        else:
            out = enc(x)
        (out * torch.arange(out.shape[1], dtype=out.dtype)).sum().backward()
        results.append([out.detach(), *(p.grad.clone() for p in enc.parameters())])
    for ours, ref in zip(*results, strict=True):
        torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
