import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from polar.errors import ConfigError
from polar.rl.config import TrainConfig
from polar.rl.policy import load_policy
from polar.rl.trainer import Trainer

PPO_SMALL = dict(harness="gym:CartPole-v1", steps=4 * 256, seed=3, progress=False,
                 network=dict(hidden=[16]), eval_episodes=2, normalize_obs=True,
                 ppo=dict(num_envs=4, num_steps=64, update_epochs=2, num_minibatches=2))
SAC_SMALL = dict(algo="sac", harness="gym:Pendulum-v1", steps=240, seed=3, progress=False,
                 network=dict(hidden=[16], activation="relu"), eval_episodes=1,
                 sac=dict(learning_starts=60, batch_size=32, save_buffer=True, num_envs=2))


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_policy(run).to_state()[0]


@pytest.mark.parametrize("base,stop", [(PPO_SMALL, 2), (SAC_SMALL, 40)])
def test_resume_matches_uninterrupted_run(tmp_path, base, stop):
    full = Trainer(TrainConfig(**base), tmp_path / "full")
    res_full = full.run()
    # The same run, interrupted (checkpoint, then the process "dies"), then resumed.
    part = Trainer(TrainConfig(**base), tmp_path / "part")
    part.run(max_updates=stop)
    part.checkpoint()
    resumed = Trainer.resume(tmp_path / "part")
    assert resumed.env_steps == part.env_steps > 0
    res_resumed = resumed.run()
    wa, wb = _weights(tmp_path / "full"), _weights(tmp_path / "part")
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k
    assert res_full["mean_return"] == res_resumed["mean_return"]
    assert res_full["env_steps"] == res_resumed["env_steps"]
    rows = [json.loads(x) for x in (tmp_path / "part" / "metrics.jsonl").read_text().splitlines()]
    full_rows = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    strip = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "sps", "eval/wall_s")}  # noqa: E731
    assert [strip(r) for r in rows] == [strip(r) for r in full_rows]


def test_run_dir_contents(tmp_path):
    res = Trainer(TrainConfig(**PPO_SMALL), tmp_path).run()
    ev = json.loads((tmp_path / "eval.json").read_text())
    assert ev == res
    assert {"mean_return", "std_return", "episodes", "env_steps", "wall_s"} <= set(ev)
    assert ev["episodes"] == 2 and ev["env_steps"] >= 1024
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {"env_steps", "sps", "approx_kl", "clipfrac", "explained_variance", "entropy", "lr"} <= set(rows[0])
    # TensorBoard holds every metrics row (one event per row, several scalars each).
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(tmp_path / "tb"))
    ea.Reload()
    kl = ea.Scalars("approx_kl")
    train_rows = [r for r in rows if "approx_kl" in r]
    assert [e.step for e in kl] == [r["env_steps"] for r in train_rows]
    assert [e.value for e in kl] == pytest.approx([r["approx_kl"] for r in train_rows])
    assert {"entropy", "clipfrac", "lr", "eval/mean_return"} <= set(ea.Tags()["scalars"])


def test_bad_config_names_the_field():
    with pytest.raises(Exception) as e:
        TrainConfig(harness="gym:CartPole-v1", ppo=dict(num_stepz=3))
    assert "num_stepz" in str(e.value)
    from polar.config import validate

    with pytest.raises(ConfigError, match=r"ppo\.learning_rate"):
        validate(TrainConfig, {"harness": "gym:CartPole-v1", "ppo": {"learning_rate": -1}}, "cfg.yaml")
    with pytest.raises(ConfigError, match="harness"):
        validate(TrainConfig, {"harness": ["gym:CartPole-v1", "gym:Acrobot-v1"]}, "cfg.yaml")


def test_harnesses_with_different_spaces_are_rejected(tmp_path):
    from polar.errors import HarnessError

    cfg = TrainConfig(harness=["gym:CartPole-v1", "gym:Acrobot-v1"], workers=2, progress=False)
    with pytest.raises(HarnessError, match="Acrobot"):
        Trainer(cfg, tmp_path)


def _polar(*args: str, **kw) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "polar"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300, **kw)


def test_cli_bad_config_file(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("harness: gym:CartPole-v1\nppo:\n  gae_lambdaa: 0.9\n")
    r = _polar("train", str(cfg))
    assert r.returncode == 2
    assert "ppo.gae_lambdaa" in r.stderr and "ConfigError" in r.stderr


def test_cli_kill9_then_resume(tmp_path):
    out = tmp_path / "run"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("checkpoint_every: 2048\nnetwork: {hidden: [16]}\n"
                   "ppo: {num_envs: 4, num_steps: 64, update_epochs: 1}\n")
    exe = Path(sys.executable).parent / "polar"
    proc = subprocess.Popen([str(exe), "train", str(cfg), "--algo", "ppo", "--harness", "gym:CartPole-v1",
                             "--steps", "16384", "--seed", "1", "--out", str(out), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    latest = out / "checkpoints" / "latest"
    deadline = time.time() + 120
    while time.time() < deadline and not latest.exists() and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # mid-run, possibly mid-checkpoint
    proc.wait()
    assert latest.exists(), "no checkpoint was written before the kill"
    assert not (out / "eval.json").exists(), "the run finished before it could be killed"
    r = _polar("train", "--resume", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    ev = json.loads((out / "eval.json").read_text())
    assert ev["env_steps"] == 16384
    steps = [json.loads(x)["env_steps"] for x in (out / "metrics.jsonl").read_text().splitlines()
             if '"update"' in x]
    assert steps == sorted(set(steps))  # no update logged twice after the resume


# ---- kill points: nothing is logged twice, nothing of two runs mixes -------------------

KILL_SCRIPT = """
import os, signal, sys, json
from polar.rl.config import TrainConfig
from polar.rl import trainer as tr

when, out, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
orig = tr.Trainer.checkpoint

def checkpoint(self):
    if when == "before-final-checkpoint" and self.final is not None:
        os.kill(os.getpid(), signal.SIGKILL)  # the final evaluation row is written, nothing else
    path = orig(self)
    if when == "before-eval-json" and self.final is not None:
        os.kill(os.getpid(), signal.SIGKILL)  # the final checkpoint is written, eval.json not
    return path

tr.Trainer.checkpoint = checkpoint
t = tr.Trainer(TrainConfig(**cfg), out)
if when == "mid-run":
    def die(trainer):
        if trainer.updates == 3:  # one update after the checkpoint at update 2
            trainer.runlog.flush()  # its row's event is on disk too
            os.kill(os.getpid(), signal.SIGKILL)
    t.hooks.append(die)
t.run()
"""

KILLED = dict(PPO_SMALL, checkpoint_every=512, eval_every=512)


def _killed_run(tmp_path: Path, when: str) -> Path:
    out = tmp_path / when
    r = subprocess.run([sys.executable, "-c", KILL_SCRIPT, when, str(out), json.dumps(KILLED)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert not (out / "eval.json").exists()
    return out


def _rows(run: Path) -> list[dict]:
    strip = ("wall_s", "sps", "eval/wall_s")
    return [{k: v for k, v in json.loads(x).items() if k not in strip}
            for x in (run / "metrics.jsonl").read_text().splitlines()]


def _tb_steps(run: Path, tag: str) -> list[int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run / "tb"))
    ea.Reload()
    # sorted: a resumed run writes a second event file, and files named in the same second are
    # read in pid order; what must hold is that every step is there exactly once
    return sorted(e.step for e in ea.Scalars(tag))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("full")
    Trainer(TrainConfig(**KILLED), out).run()
    return out


@pytest.mark.parametrize("when", ["mid-run", "before-final-checkpoint", "before-eval-json"])
def test_kill9_then_resume_logs_every_row_once(tmp_path, uninterrupted, when):
    out = _killed_run(tmp_path, when)
    res = Trainer.resume(out).run()
    assert json.loads((out / "eval.json").read_text()) == res
    # metrics.jsonl and TensorBoard hold exactly the rows of an uninterrupted run: the final
    # evaluation row once, the rows written after the checkpoint once.
    # Equal up to float noise: a resumed update can differ from the uninterrupted one in the last
    # bits (the CPU kernels' results depend on how the reloaded tensors sit in memory), which a
    # tiny KL such as 5.0734e-07 vs 5.0745e-07 shows; a row missing, doubled or from another
    # update differs by far more.
    got, want = _rows(out), _rows(uninterrupted)
    assert [r.keys() for r in got] == [r.keys() for r in want]
    assert got == [pytest.approx(r, rel=1e-3, abs=1e-8) for r in want]
    for tag in ("approx_kl", "eval/mean_return"):
        assert _tb_steps(out, tag) == _tb_steps(uninterrupted, tag), tag
    assert res["mean_return"] == json.loads((uninterrupted / "eval.json").read_text())["mean_return"]


def test_fresh_run_never_appends_to_a_killed_run(tmp_path):
    out = _killed_run(tmp_path, "mid-run")
    with pytest.raises(ConfigError, match="--resume.*--overwrite"):
        Trainer(TrainConfig(**KILLED), out)
    fresh = Trainer(TrainConfig(**KILLED), out, overwrite=True)
    assert (out / "metrics.jsonl").exists()  # nothing is deleted before the run starts
    fresh.run()
    rows = _rows(out)
    assert [r["env_steps"] for r in rows if "update" in r] == [256, 512, 768, 1024]  # one run's rows
    assert _tb_steps(out, "approx_kl") == [256, 512, 768, 1024]
    assert len(list((out / "tb").glob("events.out.tfevents.*"))) == 1


def test_cli_run_folders(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("harness: gym:CartPole-v1\nsteps: 256\neval_episodes: 1\nout: runs/cp\n"
                   "network: {hidden: [8]}\nppo: {num_envs: 2, num_steps: 64, update_epochs: 1}\n")
    # No --out: a new timestamped folder per run, under the config's `out` name.
    for _ in range(2):
        r = _polar("train", str(cfg), "--no-progress", "--eval-stochastic", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(p.name.startswith("cp-") for p in runs)
    assert json.loads((runs[0] / "eval.json").read_text())["deterministic"] is False
    # An existing --out needs --resume or --overwrite; nothing is written on refusal.
    before = sorted(p.name for p in runs[0].iterdir())
    r = _polar("train", str(cfg), "--out", str(runs[0]), "--no-progress", cwd=tmp_path)
    assert r.returncode == 2 and "--overwrite" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in runs[0].iterdir()) == before
    r = _polar("train", str(cfg), "--out", str(runs[0]), "--overwrite", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((runs[0] / "eval.json").read_text())["deterministic"] is True


def test_cli_sac_kill9_then_resume_keeps_its_replay_buffer(tmp_path):
    out = tmp_path / "sac"
    exe = Path(sys.executable).parent / "polar"
    args = [str(exe), "train", "--algo", "sac", "--harness", "gym:Pendulum-v1", "--steps", "3000", "--seed", "2",
            "--out", str(out), "--no-progress"]
    cfg = tmp_path / "sac.yaml"
    cfg.write_text("checkpoint_every: 400\neval_episodes: 1\nnetwork: {hidden: [16], activation: relu}\n"
                   "sac: {learning_starts: 100, batch_size: 32}\n")
    proc = subprocess.Popen([*args[:2], str(cfg), *args[2:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    latest = out / "checkpoints" / "latest"
    deadline = time.time() + 200
    while time.time() < deadline and not latest.exists() and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert latest.exists() and not (out / "eval.json").exists()
    ckpt = out / "checkpoints" / latest.read_text()
    assert (ckpt / "replay.npz").exists()
    saved_steps = int(latest.read_text().split("-")[1])
    r = _polar("train", "--resume", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert f"replay buffer restored: {saved_steps} transitions" in r.stderr
    assert json.loads((out / "eval.json").read_text())["env_steps"] == 3000


@pytest.mark.parametrize("flush", [True, False])
def test_trainer_flushes_subnormals_unless_told_not_to(tmp_path, flush):
    """Adam's moments of dead ReLU units decay through the subnormal range, where x86
    arithmetic is far slower: the trainer flushes them to zero (`flush_denormal`)."""
    try:
        Trainer(TrainConfig(**SAC_SMALL, flush_denormal=flush), tmp_path)
        tiny = torch.tensor([1e-39])  # subnormal in float32
        assert bool((tiny * 2 == 0).item()) is flush
    finally:
        torch.set_flush_denormal(False)
