"""`polar code rl` end to end on the built-in SmolLM2 (slow: a real llama.cpp server, real sandboxes)."""

from __future__ import annotations

import json

import pytest

from polar.evals.code_rl import CodeRLConfig, code_rl
from polar.evals.code_tasks import TASKS


@pytest.mark.slow
def test_an_iteration_samples_gates_plays_charges_every_step_and_resumes(tmp_path) -> None:
    cfg = CodeRLConfig(model="smollm2-135m", tasks=["mountaincar"], iterations=1, group_size=2, max_tokens=48,
                       backend="process", port=8039)
    res = code_rl(cfg, tmp_path)
    row = res["rows"][0]
    programs = [json.loads(x) for x in (tmp_path / "iter-1" / "programs.jsonl").read_text().splitlines()]
    assert len(programs) == row["programs"] == 2
    for p in programs:  # a refused or failing program earns the lowest return; the record says why
        if p["error"] is not None:
            assert p["reward"] == TASKS["mountaincar"].lowest_return and p["error"]
    assert row["env_steps_total"] == sum(p["steps"] for p in programs)
    calls = (tmp_path / "iter-1" / "calls.jsonl").read_text().splitlines()
    assert len(calls) == 2 and all(json.loads(c)["token_ids_source"] == "sampled" for c in calls)
    before = (tmp_path / "iter-1" / "programs.jsonl").stat().st_mtime_ns
    assert code_rl(cfg, tmp_path)["rows"] == res["rows"]  # resumed: nothing sampled again
    assert (tmp_path / "iter-1" / "programs.jsonl").stat().st_mtime_ns == before


def test_a_program_is_scored_over_every_start_it_played() -> None:
    """`episodes: K`: a sampled program plays K start states (the iteration's seed, then + 1,000,000 * j);
    its reward is the mean return, its success the share solved, every step charged."""
    from polar.evals.code_rl import score_program, train_seeds
    from polar.evals.code_runner import run_program
    from polar.sandboxes.profiles import SandboxProfile

    assert train_seeds(10_003, 1) == [10_003] and train_seeds(10_003, 3) == [10_003, 1_010_003, 2_010_003]
    task, box = TASKS["mountaincar"], SandboxProfile(backend="process")
    pump = "```python\ndef act(obs):\n    return 2 if obs[1] >= 0 else 0\n```"
    rec = run_program(task, pump, train_seeds(10_003, 3), box)
    scored = score_program(rec)
    assert scored["episodes"] == 3 and scored["success"] == 1.0 and scored["error"] is None
    assert scored["reward"] == sum(r.ret for r in rec.episodes) / 3 and scored["steps"] == sum(r.steps for r in rec.episodes)
    assert len({r.ret for r in rec.episodes}) > 1  # the starts differ
    idle = score_program(run_program(task, "```python\ndef act(obs):\n    return 1\n```", train_seeds(10_003, 2), box))
    assert idle["success"] == 0.0 and idle["reward"] == -200.0 and idle["steps"] == 400
    broken = score_program(run_program(task, "```python\ndef act(obs):\n    return obs[9]\n```", [10_003], box))
    assert broken["reward"] == task.lowest_return and broken["error"] and broken["success"] == 0.0


def test_the_episodes_setting_leaves_older_run_folders_resumable(tmp_path) -> None:
    from polar.errors import ConfigError
    from polar.evals.code_rl import CodeRLRun

    cfg = CodeRLConfig(model="smollm2-135m", tasks=["mountaincar"], backend="process")
    CodeRLRun(cfg, tmp_path).finish(0, "prepare", {})
    CodeRLRun(cfg.model_copy(update={"episodes": 1}), tmp_path)  # the default is not recorded
    with pytest.raises(ConfigError, match="another config"):
        CodeRLRun(cfg.model_copy(update={"episodes": 4}), tmp_path)
