"""Cached cells are keyed on everything that changes their result: editing a connector game's
source, a harness spec, a prompt template or a skill hook re-runs the cells that depend on it,
and only those; `fresh` re-runs everything."""

from __future__ import annotations

import shutil
from pathlib import Path

from polar.domains.minigrid.primitives import primitive_skills
from polar.evals.runner import run_cells
from polar.harnesses.fingerprint import harness_fingerprint
from polar.skills.store import SkillLibrary

ROOT = Path(__file__).resolve().parents[2]


def _game(tmp_path: Path) -> Path:
    """A copy of the keydoor example game in its own folder; returns its spec."""
    dst = tmp_path / "harnesses" / "keydoor"
    shutil.copytree(ROOT / "harnesses" / "keydoor", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst / "keydoor.yaml"


def _suite(spec: Path) -> dict:
    return {
        "name": "keys",
        "agents": [{"name": "rnd", "kind": "random"}],
        "harnesses": [{"id": str(spec), "name": "game", "max_steps": 10},
                      {"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 10}],
        "seeds": [0, 1],
        "episodes": 1,
    }


def test_editing_a_game_file_reruns_that_games_cells_only(tmp_path: Path) -> None:
    spec = _game(tmp_path)
    suite = _suite(spec)
    first = run_cells(suite, tmp_path / "out", progress=False)
    assert len(first.ran) == 4 and not first.skipped
    assert not run_cells(suite, tmp_path / "out", progress=False).ran  # nothing changed: all reused

    game = spec.parent / "keydoor_game.py"  # imported by the connector script the spec names
    game.write_text(game.read_text() + "\n# a change to the game's rules would go here\n")
    again = run_cells(suite, tmp_path / "out", progress=False)
    assert sorted(c.slug for c in again.ran) == ["rnd/game/seed-0", "rnd/game/seed-1"]
    assert len(again.skipped) == 2

    spec.write_text(spec.read_text().replace("size: 7", "size: 6"))  # the spec file itself
    assert {c.harness for c in run_cells(suite, tmp_path / "out", progress=False).ran} == {"game"}

    everything = run_cells(suite, tmp_path / "out", progress=False, fresh=True)
    assert len(everything.ran) == 4 and not everything.skipped


def test_harness_fingerprint_follows_the_game_sources_not_other_files(tmp_path: Path) -> None:
    spec = _game(tmp_path)
    before = harness_fingerprint(str(spec))
    (tmp_path / "harnesses" / "notes.txt").write_text("not part of the game")
    (spec.parent / "__pycache__").mkdir(exist_ok=True)
    assert harness_fingerprint(str(spec)) == before
    (spec.parent / "keydoor_connector.py").write_text((spec.parent / "keydoor_connector.py").read_text() + "\n")
    assert harness_fingerprint(str(spec)) != before
    assert harness_fingerprint("gym:CartPole-v1") == harness_fingerprint("gym:CartPole-v1")
    assert harness_fingerprint("gym:CartPole-v1") != harness_fingerprint("gym:Acrobot-v1")


def test_library_fingerprint_covers_hooks_and_evaluations(tmp_path: Path) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    empty = lib.fingerprint()
    skill = lib.register(primitive_skills()[0])
    registered = lib.fingerprint()
    assert registered != empty
    (lib.root / "hooks").mkdir()
    (lib.root / "hooks" / "mine.py").write_text("def features(obs, args, harness=None):\n    return obs\n")
    with_hook = lib.fingerprint()
    assert with_hook != registered
    (lib.root / "hooks" / "mine.py").write_text("def features(obs, args, harness=None):\n    return [obs]\n")
    assert lib.fingerprint() != with_hook
    from polar.skills.model import Measurement

    measured = lib.fingerprint()
    lib.record_evaluation(skill, Measurement.from_counts(3, 4, harness="minigrid:x"))
    assert lib.fingerprint() != measured  # planners read the measured success


def test_a_changed_skill_hook_reruns_planner_cells(tmp_path: Path) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    for s in primitive_skills():
        lib.register(s)
    (lib.root / "hooks").mkdir()
    hook = lib.root / "hooks" / "extra.py"
    hook.write_text("X = 1\n")
    suite = {"name": "hooks", "agents": [{"name": "sym", "kind": "planner", "planner": "symbolic",
                                          "skills": str(lib.root), "sandbox": "none"},
                                         {"name": "rnd", "kind": "random"}],
             "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 8}],
             "seeds": [0], "episodes": 1}
    assert len(run_cells(suite, tmp_path / "out", progress=False).ran) == 2
    hook.write_text("X = 2\n")
    again = run_cells(suite, tmp_path / "out", progress=False)
    # the suite is unchanged: only the hook file's content moved the planner's key
    assert [c.agent for c in again.ran] == ["sym"] and [c.agent for c in again.skipped] == ["rnd"]


def test_editing_the_game_retrains_a_pure_rl_cell_instead_of_reusing_its_training(tmp_path: Path) -> None:
    from polar.evals.training import GAME_FILE

    game_dir = tmp_path / "harnesses" / "corridor"
    shutil.copytree(ROOT / "polar" / "scaffold" / "workspace" / "harnesses" / "corridor", game_dir,
                    ignore=shutil.ignore_patterns("__pycache__"))
    spec = game_dir / "corridor.yaml"
    ppo = {"name": "ppo", "kind": "pure_rl", "train_steps": 256, "eval_every": 0,
           "overrides": {"ppo": {"num_envs": 2, "num_steps": 64}, "network": {"hidden": [8]}}}
    suite = {"name": "rl", "agents": [ppo], "seeds": [0], "episodes": 1,
             "harnesses": [{"id": str(spec), "name": "corridor", "max_steps": 20}]}
    out = tmp_path / "out"
    assert len(run_cells(suite, out, progress=False).ran) == 1
    [run] = list((out / "work").rglob(GAME_FILE))
    marker = run.parent / "still-the-first-training"
    marker.write_text("")

    shutil.rmtree(out / "cells")  # the cell is lost, the game unchanged: its training is reused
    assert len(run_cells(suite, out, progress=False).ran) == 1 and marker.exists()

    game = game_dir / "corridor_game.py"
    game.write_text(game.read_text() + "\n# new rules\n")  # the game changed: train again
    assert len(run_cells(suite, out, progress=False).ran) == 1
    assert not marker.exists() and run.read_text() == harness_fingerprint(str(spec))


def test_a_planner_cell_is_keyed_on_its_trained_models_weights(tmp_path: Path, monkeypatch) -> None:
    """A profile that serves a fine-tuned model: a new version under the same name (or a new
    shipped adapter) re-keys its cells; a built-in model adds nothing (its package fixes it)."""
    import yaml

    from polar.evals.planner_agent import PlannerAgent
    from polar.evals.suite import PlannerAgentConfig
    from polar.llm.models import ModelRegistry

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLAR_MODELS", str(tmp_path / "models.json"))
    (tmp_path / "planners").mkdir()
    profile = yaml.safe_load((ROOT / "planners" / "student.yaml").read_text())
    profile["server"]["model"] = "mine"
    (tmp_path / "planners" / "mine.yaml").write_text(yaml.safe_dump(profile))
    weights = tmp_path / "w1.gguf"
    weights.write_bytes(b"GGUF")
    ModelRegistry().register("mine", weights)
    config = PlannerAgentConfig(name="p", kind="planner", planner="mine")
    first = PlannerAgent.inputs_fingerprint(config)
    assert PlannerAgent.inputs_fingerprint(config) == first
    (tmp_path / "w2.gguf").write_bytes(b"GGUF")
    ModelRegistry().register("mine", tmp_path / "w2.gguf")  # mine@2: other weights
    assert PlannerAgent.inputs_fingerprint(config) != first


def test_retuning_one_family_rekeys_that_familys_cells_only(tmp_path: Path) -> None:
    from polar.evals.cells import cell_key
    from polar.evals.suite import load_suite

    recipes = tmp_path / "recipes"
    recipes.mkdir()
    base = (ROOT / "skills" / "recipes" / "ppo_doorkey5x5.yaml").read_text()
    (recipes / "a.yaml").write_text(base)
    (recipes / "b.yaml").write_text(base.replace("ent_coef: 0.01", "ent_coef: 0.05"))
    harnesses = [{"id": "minigrid:MiniGrid-Empty-5x5-v0"}, {"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}]

    def keys(**agent: object) -> dict[str, str]:
        suite = load_suite({"name": "k", "harnesses": harnesses, "seeds": [0, 1], "episodes": 1, "agents": [
            {"name": "ppo", "kind": "pure_rl", "train_steps": 64, "recipe": str(recipes / "a.yaml"), **agent}]})
        return {c.slug: cell_key(suite, c) for c in suite.cells()}

    before = keys()
    assert keys(recipes={"DoorKey-5x5": str(recipes / "a.yaml")}) == before  # the same recipe: same keys
    tuned = keys(recipes={"DoorKey-5x5": str(recipes / "b.yaml")})
    changed = sorted(slug for slug in before if tuned[slug] != before[slug])
    assert changed == ["ppo/DoorKey-5x5/seed-0", "ppo/DoorKey-5x5/seed-1"]
    # one policy over every harness reads every recipe: a changed one re-keys all its cells
    multi = keys(multitask=True, recipes={"DoorKey-5x5": str(recipes / "a.yaml")})
    multi_tuned = keys(multitask=True, recipes={"DoorKey-5x5": str(recipes / "b.yaml")})
    assert all(multi_tuned[slug] != multi[slug] for slug in multi)
