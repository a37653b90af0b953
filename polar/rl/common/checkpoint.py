"""Atomic checkpoints: a complete directory is renamed into place, then a pointer file is
replaced (also by rename), so a `kill -9` at any moment leaves the previous checkpoint intact.

Layout of `OUT/checkpoints/`:
    ckpt-00000012/policy.safetensors, policy.json   the exportable policy (weights + normaliser)
    ckpt-00000012/state.pt                          optimisers, SAC targets/log alpha, RNG states,
                                                    counters, LR schedule position, config
    ckpt-00000012/envs.pkl                          serial runs: the vector env mid-episode
    ckpt-00000012/replay.npz                        SAC's replay buffer (`save_buffer`, default on)
    latest                                          the name of the newest complete ckpt dir
`state.pt` and `envs.pkl` are pickles written by Polar itself: load only your own runs.
`envs.pkl` names Polar's classes by module; checkpoints written before `polar/rl/` became
packages name the old flat modules, which `_MOVED` maps to their new homes.
"""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from polar.errors import PolarError
from polar.files import fsync_dir
from polar.rl.policy import Policy

# Flat modules of polar/rl/ before the packages (old checkpoints' pickles name them).
_MOVED = {f"polar.rl.{name}": f"polar.rl.common.{name}" for name in (
    "batches", "buffers", "checkpoint", "distributions", "envs", "evaluate", "lstm", "networks",
    "normalize", "observations", "optim", "ray_session", "rollout", "runlog", "workers")}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED.get(module, module), name)


class CheckpointError(PolarError):
    """A run directory holds no usable checkpoint."""


def save_checkpoint(
    run_dir: Path,
    name: str,
    policy: Policy,
    state: dict[str, Any],
    envs: Any | None = None,
    replay: dict[str, Any] | None = None,
    keep: int = 2,
) -> Path:
    root = run_dir / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / name
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    policy.save(tmp)
    if replay is not None:
        state = {**state, "replay_meta": replay["meta"]}
        with open(tmp / "replay.npz", "wb") as f:
            np.savez(f, **replay["arrays"])
    torch.save(state, tmp / "state.pt")
    if envs is not None:
        try:
            (tmp / "envs.pkl").write_bytes(pickle.dumps(envs))
        except Exception as err:  # noqa: BLE001 - an unpicklable env only costs exactness
            (tmp / "envs.unpicklable").write_text(f"{type(err).__name__}: {err}\n")
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    fsync_dir(root)
    ptr = root / ".latest.tmp"
    ptr.write_text(name)
    with open(ptr, "rb") as fh:
        os.fsync(fh.fileno())
    ptr.replace(root / "latest")
    fsync_dir(root)
    # Old checkpoints go only after the pointer moved on.
    old = sorted(p for p in root.glob("ckpt-*") if p.is_dir() and p.name != name)
    for p in old[: max(0, len(old) - (keep - 1))]:
        shutil.rmtree(p, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path:
    ptr = run_dir / "checkpoints" / "latest"
    if not ptr.exists():
        raise CheckpointError(f"{run_dir}: no checkpoint to resume from (no checkpoints/latest)")
    path = run_dir / "checkpoints" / ptr.read_text().strip()
    if not (path / "state.pt").exists():
        raise CheckpointError(f"{path}: checkpoint is incomplete (no state.pt)")
    return path


def load_checkpoint(path: Path) -> tuple[Policy, dict[str, Any], Any | None, dict[str, Any] | None]:
    """(policy, state, envs or None, replay state or None)."""
    policy = Policy.load(path)
    # map_location: a checkpoint written on a GPU machine loads on a CPU-only one.
    state = torch.load(path / "state.pt", weights_only=False, map_location="cpu")
    envs = None
    if (path / "envs.pkl").exists():
        with open(path / "envs.pkl", "rb") as f:
            envs = _Unpickler(f).load()
    replay = None
    if (path / "replay.npz").exists():
        with np.load(path / "replay.npz") as z:
            replay = {"meta": state["replay_meta"], "arrays": {k: z[k] for k in z.files}}
    return policy, state, envs, replay
