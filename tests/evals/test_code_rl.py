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
