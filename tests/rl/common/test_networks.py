"""Polar's tanh: the value and gradient of torch.tanh, within float32 rounding, on every path;
the numpy path taken where it is the faster one."""

import functools
import time

import pytest
import torch

from polar.errors import ConfigError
from polar.rl.common import networks
from polar.rl.common.networks import FAST_TANH_MIN, TANH_ENV, EnsembleMLP, numpy_tanh_pays, tanh


@pytest.fixture
def fresh_choice(monkeypatch):
    """numpy_tanh_pays measured or read anew, and forgotten after the test."""
    monkeypatch.delenv(TANH_ENV, raising=False)
    numpy_tanh_pays.cache_clear()
    yield monkeypatch
    numpy_tanh_pays.cache_clear()


@pytest.mark.parametrize("numpy_path", [True, False])
def test_tanh_matches_torch_in_value_and_gradient(monkeypatch, numpy_path):
    monkeypatch.setattr(networks, "numpy_tanh_pays", lambda: numpy_path)
    x = torch.cat([torch.randn(FAST_TANH_MIN * 2) * 4, torch.logspace(-8, 1.7, 500), -torch.logspace(-8, 1.7, 500),
                   torch.tensor([0.0, 30.0, -30.0, 1e4, -1e4])]).requires_grad_()
    ref = torch.tanh(x.detach().double())
    y = tanh(x)
    # relative error: near 0 tanh(x) ~ x, so an absolute bound would hide a formula that cancels
    rel = ((y.detach().double() - ref).abs() / ref.abs().clamp(min=1e-30)).max()
    assert rel < 1.5e-7  # float32 rounding: a correctly rounded tanh is within 6e-8
    g = torch.randn_like(x)
    y.backward(g)
    x_torch = x.detach().clone().requires_grad_()
    torch.tanh(x_torch).backward(g)  # torch's gradient, in float32 like ours
    assert torch.allclose(x.grad, x_torch.grad, rtol=1e-5, atol=1e-6)
    with torch.no_grad():  # the no-autograd path gives the same values
        assert torch.equal(tanh(x), y.detach())
    assert torch.isnan(tanh(torch.full((FAST_TANH_MIN,), float("nan")))).all()


def test_small_tensors_and_other_dtypes_take_torch_tanh_exactly():
    x = torch.randn(8, 64)
    assert torch.equal(tanh(x), torch.tanh(x))
    half = torch.randn(FAST_TANH_MIN * 2).to(torch.bfloat16)
    assert torch.equal(tanh(half), torch.tanh(half))


def test_ensemble_trunk_trains_through_it():
    net = EnsembleMLP(4, [64, 64], "tanh")
    x = torch.randn(256, 4)
    net(x).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in net.parameters())


def test_the_environment_variable_picks_the_path(fresh_choice):
    for value, numpy_path in (("numpy", True), ("torch", False)):
        fresh_choice.setenv(TANH_ENV, value)
        numpy_tanh_pays.cache_clear()
        assert numpy_tanh_pays() is numpy_path
    fresh_choice.setenv(TANH_ENV, "fast")
    numpy_tanh_pays.cache_clear()
    with pytest.raises(ConfigError, match="POLAR_TANH='fast'"):
        numpy_tanh_pays()


def _slow(fn):
    @functools.wraps(fn)
    def slowed(x):
        time.sleep(2e-4)
        return fn(x)
    return slowed


def test_the_measurement_picks_the_faster_path_and_leaves_the_rng_alone(fresh_choice):
    fresh_choice.setattr(networks, "_numpy_tanh", _slow(networks._numpy_tanh))
    torch.manual_seed(0)
    assert numpy_tanh_pays() is False
    after = torch.rand(3)
    torch.manual_seed(0)
    assert torch.equal(after, torch.rand(3))  # the measurement drew nothing from the global RNG

    fresh_choice.setattr(networks, "_numpy_tanh", networks._numpy_tanh.__wrapped__)
    fresh_choice.setattr(torch, "tanh", _slow(torch.tanh))
    numpy_tanh_pays.cache_clear()
    assert numpy_tanh_pays() is True
