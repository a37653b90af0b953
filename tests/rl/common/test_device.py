"""The learner's device (`device: auto|cpu|cuda`): what `auto` picks, checkpoints that load on
any device, and, where CUDA is present, PPO, SAC and DQN updating on the GPU while rollouts
act on the CPU."""

import json

import pytest
import torch

from polar.errors import ConfigError
from polar.rl.common.checkpoint import latest_checkpoint, load_checkpoint
from polar.rl.common.device import learner_device
from polar.rl.config import TrainConfig
from polar.rl.trainer import Trainer

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
PIXELS = "gym:tests.rl.rl_scripted_envs:PixelSideEnv"


def _ppo(**kw) -> TrainConfig:
    return TrainConfig(**({"harness": "gym:CartPole-v1", "steps": 3 * 2 * 32, "progress": False,
                           "eval_episodes": 1, "ppo": dict(num_envs=2, num_steps=32, num_minibatches=2,
                                                           update_epochs=2)} | kw))


def test_auto_picks_cuda_only_for_pixel_policies_on_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert learner_device("auto", {"image": "image"}).type == "cuda"
    assert learner_device("auto", {"obs": "vector"}).type == "cpu"
    assert learner_device("auto", {"image": "index_grid"}).type == "cpu"
    assert learner_device("cpu", {"image": "image"}).type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert learner_device("auto", {"image": "image"}).type == "cpu"
    with pytest.raises(ConfigError, match="device cuda: no CUDA GPU"):
        learner_device("cuda", {"obs": "vector"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only machine's choice")
def test_auto_resolves_to_cpu_here_even_for_pixels(tmp_path):
    t = Trainer(_ppo(harness=PIXELS, network=dict(image_features=16)), tmp_path)
    assert t.cfg.device == "auto" and t.device.type == "cpu" and t.learner is t.policy
    before = {k: v.clone() for k, v in t.policy.state_dict().items()}
    res = t.run()  # trains: the weights move and every parameter stays on the CPU
    assert res["env_steps"] == t.cfg.steps and len((tmp_path / "metrics.jsonl").read_text().splitlines()) >= 3
    assert any(not torch.equal(before[k], v) for k, v in t.policy.state_dict().items())
    assert _params_on(t.policy) == {"cpu"}
    with pytest.raises(ConfigError, match="device cuda"):
        Trainer(_ppo(device="cuda"), tmp_path / "b")


def test_checkpoint_tensors_are_on_cpu_and_load_with_map_location(tmp_path):
    cfg = _ppo(algo="sac", harness="gym:Pendulum-v1", steps=60, network=dict(hidden=[16]),
               sac=dict(learning_starts=20, batch_size=8))
    Trainer(cfg, tmp_path).run()
    path = latest_checkpoint(tmp_path)
    raw = torch.load(path / "state.pt", weights_only=False, map_location="cpu")
    tensors = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            tensors.append(x)
        elif isinstance(x, dict):
            [walk(v) for v in x.values()]
        elif isinstance(x, (list, tuple)):
            [walk(v) for v in x]

    walk(raw["optim"])
    assert tensors and all(t.device.type == "cpu" for t in tensors)
    policy, state, _, _ = load_checkpoint(path)
    assert all(p.device.type == "cpu" for p in policy.parameters())
    # Resumed with an explicit device (the override `polar train --resume --device` passes).
    t = Trainer.resume(tmp_path, device="cpu")
    assert t.cfg.device == "cpu" and t.env_steps == 60


def _params_on(module: torch.nn.Module) -> set[str]:
    return {p.device.type for p in module.parameters()}


@cuda
@pytest.mark.parametrize("algo", ["ppo", "sac", "dqn"])
def test_learner_on_cuda_rollouts_on_cpu_and_resume_on_cpu(tmp_path, algo):
    kw = {"ppo": dict(harness=PIXELS, network=dict(image_features=32)),
          "sac": dict(algo="sac", harness="gym:Pendulum-v1", steps=200, sac=dict(learning_starts=50, batch_size=32)),
          "dqn": dict(algo="dqn", harness="gym:CartPole-v1", steps=400,
                      dqn=dict(learning_starts=100, batch_size=32, train_freq=4))}[algo]
    cfg = _ppo(device="cuda", checkpoint_every=100, **kw)
    t = Trainer(cfg, tmp_path)
    assert _params_on(t.learner) == {"cuda"} and _params_on(t.policy) == {"cpu"}
    t.run(max_updates=2 if algo == "ppo" else 40)
    # The CPU policy follows the learner after every update.
    for a, b in zip(t.policy.state_dict().values(), t.learner.state_dict().values(), strict=True):
        assert torch.equal(a, b.cpu())
    t2 = Trainer.resume(tmp_path, device="cpu")
    assert t2.learner is t2.policy
    res = t2.run()
    assert res["env_steps"] >= cfg.steps
    assert json.loads((tmp_path / "eval.json").read_text())["env_steps"] == res["env_steps"]


@cuda
def test_ppo_update_on_cuda_matches_cpu(tmp_path):
    # The same first update (the same rollout, autograd on both): metrics agree to float rounding.
    rows = []
    for dev in ("cpu", "cuda"):
        cfg = _ppo(device=dev, steps=2 * 32, ppo=dict(num_envs=2, num_steps=32, num_minibatches=1,
                                                      update_epochs=1, analytic_grad=False, fused_adam=False))
        Trainer(cfg, tmp_path / dev).run()
        rows.append(json.loads((tmp_path / dev / "metrics.jsonl").read_text().splitlines()[0]))
    for k in ("pg_loss", "v_loss", "entropy", "approx_kl"):
        assert rows[0][k] == pytest.approx(rows[1][k], rel=1e-4, abs=1e-6)


def test_a_separate_learner_copy_trains_exactly_as_the_policy_itself(tmp_path):
    # The machinery of a GPU learner, run on the CPU: the algorithm updates a copy and the
    # trainer refreshes the rollout policy from it after every update. Same ops, same floats:
    # the curve and the final weights equal those of the usual single-module run.
    import copy

    from polar.rl.registry import algorithm_spec

    cfg = _ppo(normalize_obs=True)
    plain = Trainer(cfg, tmp_path / "plain")
    plain.run()
    two = Trainer(cfg, tmp_path / "two")
    two.learner = copy.deepcopy(two.policy)
    two.algo = algorithm_spec(cfg.algo).algorithm_class()(two.learner, cfg, two.timer)
    two.run()
    read = lambda d: [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]  # noqa: E731
    drop = {"sps", "wall_s", "eval/wall_s"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in read(tmp_path / "plain")] == \
           [{k: v for k, v in r.items() if k not in drop} for r in read(tmp_path / "two")]
    for a, b in zip(plain.policy.state_dict().values(), two.policy.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_polar_train_device_flag(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from polar.commands.app import app

    runner = CliRunner()
    args = ["train", "--harness", "gym:CartPole-v1", "--steps", "64", "--no-progress"]
    ok = runner.invoke(app, [*args, "--device", "cpu", "--out", str(tmp_path / "a")])
    assert ok.exit_code == 0, ok.output
    assert yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())["device"] == "cpu"
    if not torch.cuda.is_available():
        bad = runner.invoke(app, [*args, "--device", "cuda", "--out", str(tmp_path / "b")])
        assert bad.exit_code != 0 and "device cuda: no CUDA GPU" in (bad.output + str(bad.exception))
        assert not (tmp_path / "b" / "metrics.jsonl").exists()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_ray_workers_act_on_cpu_whatever_the_learners_device(tmp_path, device):
    # The learner on `device`, one Ray worker: the worker's policy stays on the CPU and the
    # trainer's CPU policy (whose weights go to the workers) equals the learner after each update.
    import ray

    from polar.rl.common.ray_session import init_ray

    init_ray(num_cpus=1, object_store_mb=80)
    seen: list[tuple[set[str], bool]] = []

    def check(tr: Trainer) -> None:
        worker = ray.get(tr.pool.actors[0].__ray_call__.remote(
            lambda w: {p.device.type for p in w.policy.parameters()}))
        same = all(torch.equal(a, b.cpu()) for a, b in
                   zip(tr.policy.state_dict().values(), tr.learner.state_dict().values(), strict=True))
        seen.append((worker, same))

    try:
        t = Trainer(_ppo(harness=PIXELS, network=dict(image_features=16), device=device, workers=1), tmp_path)
        t.hooks.append(check)
        res = t.run()
    finally:
        ray.shutdown()
    assert _params_on(t.learner) == {device} and _params_on(t.policy) == {"cpu"}
    assert seen == [({"cpu"}, True)] * 3 and res["env_steps"] == t.cfg.steps
