"""The improvement rounds' planner settings: what a sampled episode records (log-probs: its
token ids become training data as they are) and what a greedy evaluation skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar.errors import ConfigError
from polar.evals.improve import ImproveConfig, _planner_overrides
from polar.evals.suite import SuiteHarness
from tests.llm.engine import require_model


def _cfg(**kw) -> ImproveConfig:
    tasks = [SuiteHarness(id="minigrid:MiniGrid-DoorKey-8x8-v0")]
    return ImproveConfig(**{"model": "smollm2-135m", "name": "x", "profile": "student", "tasks": tasks,
                            "eval_tasks": tasks, **kw})


def test_sampling_keeps_log_probs_and_evaluation_turns_them_off(tmp_path: Path) -> None:
    require_model("smollm2-135m")
    cfg = _cfg(port=8123, threads=2, observation="view")
    sample = _planner_overrides(cfg, "smollm2-135m", 0.7, tmp_path / "calls.jsonl", logprobs=True)
    assert "logprobs" not in sample  # the profile's own (student: on)
    assert sample["server"]["port"] == 8123 and sample["server"]["threads"] == 2
    assert sample["temperature"] == 0.7 and sample["observation"] == "view" and sample["cache_dir"] is None
    greedy = _planner_overrides(cfg, "smollm2-135m", 0.0, tmp_path / "calls.jsonl", logprobs=False)
    assert greedy["logprobs"] is False and greedy["model"] == "openai/smollm2-135m"


def test_each_training_seed_samples_its_own_episodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A training seed samples episode seeds no other training seed samples, and rounds without
    evaluation tasks (a suite evaluates the models) evaluate nothing."""
    import polar.evals.improve as improve_mod

    calls: list[tuple[str, list[int], int]] = []

    def fake_run(cfg, label, model_ref, harnesses, seeds, episodes, eval_seed, temperature, out, **kw):  # noqa: ANN001, ANN003
        calls.append((label, seeds, eval_seed))
        (out / "cells").mkdir(parents=True)  # no episode: nothing the harness rewarded
        (out / "calls.jsonl").touch()
        return [], {}

    monkeypatch.setattr(improve_mod, "_run", fake_run)
    for seed in (0, 3):
        improve_mod.improve(_cfg(eval_tasks=[], rounds=2, seed=seed), tmp_path / f"s{seed}")
    assert calls == [("sample-1", [1], improve_mod.SAMPLE_SEED), ("sample-2", [2], improve_mod.SAMPLE_SEED),
                     ("sample-1", [301], improve_mod.SAMPLE_SEED), ("sample-2", [302], improve_mod.SAMPLE_SEED)]


def test_a_profile_without_a_server_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="profile symbolic: improve needs an LLM profile with a server block"):
        _planner_overrides(_cfg(profile="symbolic"), "smollm2-135m", 0.0, tmp_path / "c.jsonl", logprobs=False)


def test_held_out_phrasings_are_in_no_training_source() -> None:
    """The paraphrase evaluation is honest only if its phrasings are unseen: none is a training
    paraphrase (the dataset's renderings) or a sampled task of the rounds, in the benchmark or
    in the shipped improve config, and the symbolic planner (the teacher) refuses each."""
    import importlib.util

    from polar.config import load_yaml
    from polar.domains.minigrid.missions import parse_mission
    from polar.planners.dataset import read_paraphrases

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("planner_training", root / "benchmarks" / "planner_training.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    held_out = {t for _h, t in bench.HELD_OUT_PHRASINGS.values()}
    cfg = load_yaml(root / "evals" / "planner-training" / "improve.yaml", ImproveConfig)
    assert {t.task for t in cfg.eval_tasks if t.task} == held_out
    training = {p for ps in read_paraphrases(root / "evals" / "planner-training" / "paraphrases.yaml").values()
                for p in ps}
    sampled = {t for _h, t in bench.SAMPLE_PHRASINGS.values()} | {t.task for t in cfg.tasks if t.task}
    assert sampled <= training  # the rounds sample wordings the dataset already holds
    assert not held_out & (training | sampled)
    assert all(parse_mission(t) is None for t in held_out)


def test_skills_shown_reaches_the_student_and_leaves_old_round_keys_alone() -> None:
    from polar.evals.improve import _key, student_suite

    cfg = _cfg()
    assert "skills_shown" not in student_suite(cfg, "s", {}, cfg.tasks, [0], 1, 0)["agents"][0]
    shown = cfg.model_copy(update={"skills_shown": 40})
    assert student_suite(shown, "s", {}, shown.tasks, [0], 1, 0)["agents"][0]["skills_shown"] == 40
    assert _key(shown, 1, "m") != _key(cfg, 1, "m")
    assert "skills_shown" not in cfg.model_dump(mode="json", exclude=cfg.at_default("skills_shown"))
