"""`kill -9` of a fine-tune (the SFT stage of planner training, and each improvement round's
update), in training and after it registered its model: the re-run continues from the last
checkpoint, logs every step once, ends with the weights of an uninterrupted run, and registers
the model once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from polar.llm.dataset import DatasetInfo, write_dataset
from tests.llm.test_finetune import tiny_base, toy_examples  # noqa: F401 - tiny_base is a fixture

ROOT = Path(__file__).resolve().parents[2]
STEPS = 12

DRIVER = """
import json, sys
from polar.llm.finetune import FinetuneConfig, finetune
entry = finetune(FinetuneConfig.model_validate_json(sys.argv[1]), resume=True, progress=False)
print(json.dumps({"ref": entry.ref, "steps": entry.provenance["steps"]}))
"""


def _config(tiny: Path, data: Path, work: Path, name: str) -> str:
    from polar.llm.finetune import FinetuneConfig

    return FinetuneConfig(base=str(tiny), data=str(data), name=name, lora_r=4, learning_rate=1e-2, max_steps=STEPS,
                          batch_size=1, max_length=256, warmup_ratio=0.0, save_steps=3, threads=1,
                          engine="transformers", eval_examples=0, work_dir=str(work)).model_dump_json()


def _run(cfg: str, env: dict[str, str], pause: str | None = None, marker: Path | None = None) -> dict | None:
    """Run the fine-tune in a subprocess; with `pause`, kill -9 it when it reaches that point."""
    env = {**env, "POLAR_PAUSE_AT": pause or "", "POLAR_PAUSE_FILE": str(marker or "")}
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, cfg], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if pause is None:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        return json.loads(out.strip().splitlines()[-1])
    deadline = time.monotonic() + 600
    while not (marker and marker.exists()):
        assert proc.poll() is None, proc.stderr.read()[-3000:] if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    marker.unlink()
    return None


def _registered(models: Path) -> list[str]:
    return [f"{m['name']}@{m['version']}" for m in json.loads(models.read_text())["models"]]


# four fine-tunes in subprocesses (~3 minutes here): slow
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_fine_tune_killed_in_training_and_after_registering_finishes_once(tiny_base, tmp_path):  # noqa: F811
    from safetensors.torch import load_file

    data = tmp_path / "data"
    write_dataset(data, {"train": toy_examples(), "validation": []}, DatasetInfo())
    models, marker = tmp_path / "models.json", tmp_path / "paused"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "POLAR_MODELS": str(models)}
    work = tmp_path / "w"
    cfg = _config(tiny_base, data, work, "toy")

    _run(cfg, env, "finetune-step-7", marker)  # killed in training: checkpoints at steps 3 and 6
    assert sorted(p.name for p in work.glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-6"]
    assert not models.exists()
    _run(cfg, env, "finetune-registered", marker)  # resumed from step 6, killed after registering
    assert _registered(models) == ["toy@1"]
    done = _run(cfg, env)  # the third run finds the model it registered: nothing trains or registers
    assert done == {"ref": "toy@1", "steps": STEPS} and _registered(models) == ["toy@1"]
    steps = [json.loads(line)["step"] for line in (work / "progress.jsonl").read_text().splitlines()]
    assert steps == list(range(1, STEPS + 1))  # every step logged once: none lost, none twice

    # the same weights as a run that was never interrupted (the checkpoint restores the data
    # order, the optimizer and the RNG states)
    _run(_config(tiny_base, data, tmp_path / "w-straight", "straight"), env)
    killed, straight = (load_file(str(w / "adapter" / "adapter_model.safetensors")) for w in (work, tmp_path / "w-straight"))
    assert sorted(killed) == sorted(straight)
    assert all(float((killed[k] - straight[k]).abs().max()) < 1e-5 for k in killed)
