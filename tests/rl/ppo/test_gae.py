import numpy as np
import pytest

from polar.rl.ppo.gae import compute_gae


def reference(rewards, values, next_values, term, dones, gamma, lam):
    """Lambda-returns written out the slow way, one env at a time."""
    T = len(rewards)
    adv = np.zeros(T)
    for t in range(T):
        acc, coef = 0.0, 1.0
        for k in range(t, T):
            delta = rewards[k] + gamma * (1 - term[k]) * next_values[k] - values[k]
            acc += coef * delta
            if dones[k]:
                break
            coef *= gamma * lam
        adv[t] = acc
    return adv


def test_gae_hand_computed_two_steps():
    # One env, 2 steps, no episode end: bootstrap from V(s2) = 3.
    r = np.array([[1.0], [2.0]], np.float32)
    v = np.array([[0.5], [1.0]], np.float32)
    nv = np.array([[1.0], [3.0]], np.float32)
    z = np.zeros((2, 1), bool)
    adv, ret = compute_gae(r, v, nv, z, z, gamma=0.9, lam=0.5)
    d1 = 2 + 0.9 * 3 - 1.0  # 3.7
    d0 = 1 + 0.9 * 1.0 - 0.5  # 1.4
    assert adv[1, 0] == pytest.approx(d1)
    assert adv[0, 0] == pytest.approx(d0 + 0.9 * 0.5 * d1)
    assert ret[0, 0] == pytest.approx(adv[0, 0] + 0.5)


def test_gae_truncation_terminal_and_rollout_end():
    gamma, lam = 0.99, 0.95
    # env 0: truncated at t=1 (bootstrap from V(final obs) = 10), terminated at t=3, runs on
    # past the rollout end (bootstrap from V(last obs) = 7).
    # env 1: both flags at t=2 -> counts as terminated (no bootstrap).
    r = np.array([[1, 1], [1, 1], [1, 5], [1, 1], [1, 1]], np.float32)
    v = np.array([[2, 1], [3, 1], [4, 2], [5, 3], [6, 4]], np.float32)
    term = np.array([[0, 0], [0, 0], [0, 1], [1, 0], [0, 0]], bool)
    trunc = np.array([[0, 0], [1, 0], [0, 1], [0, 0], [0, 0]], bool)
    dones = term | trunc
    final_v = {(1, 0): 10.0}
    last_v = np.array([7.0, 8.0], np.float32)
    nv = np.concatenate([v[1:], last_v[None]])
    for (t, i), fv in final_v.items():
        nv[t, i] = fv
    term_eff = term  # both flags true already counted as terminated by the collector
    adv, ret = compute_gae(r, v, nv, term_eff, dones, gamma, lam)
    for i in range(2):
        ref = reference(r[:, i], v[:, i], nv[:, i], term_eff[:, i], dones[:, i], gamma, lam)
        np.testing.assert_allclose(adv[:, i], ref, rtol=1e-5)
    # Spot values by hand: truncation step uses V(final)=10, not V(next reset obs)=4.
    assert adv[1, 0] == pytest.approx(1 + gamma * 10 - 3)
    assert adv[3, 0] == pytest.approx(1 - 5)  # terminated: no bootstrap
    d4 = 1 + gamma * 7 - 6
    assert adv[4, 0] == pytest.approx(d4)
    assert adv[2, 1] == pytest.approx(5 - 2)  # both flags: no bootstrap
    np.testing.assert_allclose(ret, adv + v, rtol=1e-6)
