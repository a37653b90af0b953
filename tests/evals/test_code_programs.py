"""Code-mode SFT data and the eval's summary: generated programs played in a real sandbox."""

from __future__ import annotations

import ast
import random
import re

import pytest

from polar.evals.code_eval import CodeEpisode, episode_pages, summarise
from polar.evals.code_programs import FAMILIES, build_dataset, draw_programs
from polar.evals.code_runner import gate, run_program
from polar.evals.code_tasks import TASKS, task_messages
from polar.llm.dataset import read_info, read_split
from polar.sandboxes.profiles import SandboxProfile

PROCESS = SandboxProfile()


@pytest.mark.parametrize("name", sorted(set(TASKS) - {"mountaincar"}))
def test_generated_programs_pass_the_gate_and_vary_in_quality(name: str) -> None:
    """Every drawn program loads under the restricted policy; among them some solve the task and
    some do not (the data is a space of controllers, not the answer)."""
    progs = draw_programs(name, 12, seed=0)
    assert len(set(progs)) == 12 and all(len(p) < 260 for p in progs)
    assert all(gate(p) is None for p in progs)
    solved = [all(e.success for e in run_program(TASKS[name], p, [0, 1], PROCESS).episodes) for p in progs]
    assert any(solved) and not all(solved), solved


def test_mountaincar_programs_reach_the_flag_from_every_start_with_varied_gains() -> None:
    """Run 4's MountainCar family pins the threshold's scale: every draw reaches the flag from
    every start (run 3's family did from some starts only), in a number of steps that varies
    with the gains (a space of controllers, not one answer)."""
    progs = draw_programs("mountaincar", 12, seed=0)
    assert len(set(progs)) == 12 and all(gate(p) is None for p in progs)
    runs = [run_program(TASKS["mountaincar"], p, [0, 1, 2, 3], PROCESS).episodes for p in progs]
    assert all(e.success for eps in runs for e in eps), [[e.ret for e in eps] for eps in runs]
    assert len({e.ret for eps in runs for e in eps}) > 5


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_program_begins_by_copying_the_prompts_names_and_uses_only_them(name: str) -> None:
    """The first line of the body is the prompt's `obs = [...]` list unpacked, in order; the
    program reads obs only there (no `obs[5]`) and names nothing else from outside it."""
    task = TASKS[name]
    for program in draw_programs(name, 8, seed=2):
        lines = program.splitlines()
        assert lines[0] == "def act(obs):" and lines[1] == f"    {', '.join(task.names)} = obs", program
        tree = ast.parse(program)
        loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        assert loaded - {"obs"} <= stored and stored - set(task.names) <= {"u", "kp", "kd"}, program
        assert not any(isinstance(n, ast.Subscript) for n in ast.walk(tree)), program


def test_the_draws_are_seeded_and_cover_every_family() -> None:
    assert draw_programs("pendulum", 6, 0) == draw_programs("pendulum", 6, 0) != draw_programs("pendulum", 6, 1)
    def shape(program: str) -> str:  # the program with its numbers blanked
        return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", program)

    for name, fams in FAMILIES.items():
        drawn = {shape(p) for p in draw_programs(name, 4 * len(fams), 0)}
        assert {shape(f(random.Random(1))) for f in fams} <= drawn, name


def test_the_dataset_pairs_each_program_with_the_prompt_the_model_sees(tmp_path) -> None:
    info = build_dataset(tmp_path / "d", per_task=5, val_per_task=1, seed=3)
    assert info.counts == {"train": 25, "validation": 5}
    train = read_split(tmp_path / "d", "train")
    by_task = {ex.harness_id: ex for ex in train}
    for task in TASKS.values():
        ex = by_task[task.harness]
        assert ex.messages == task_messages(task) and ex.completion.startswith("def act(obs):\n")
        assert ex.skill == "code" and ex.template == "code_task"
    assert read_info(tmp_path / "d").sha256 == info.sha256


def test_the_summary_checks_the_issue_bars_and_the_pages_show_the_programs() -> None:
    good = "def act(obs):\n    return 2 if obs[1] > 0 else 0\n"
    bad = "def act(obs):\n    return 1\n"
    eps = []
    for seed, prog in [(0, good), (1, good), (2, bad)]:
        rec = run_program(TASKS["mountaincar"], prog, [seed], PROCESS)
        run = rec.episodes[0]
        eps.append(CodeEpisode(task="mountaincar", seed=seed, programs=[rec], call_ids=["c"], ret=run.ret,
                               success=run.success, env_steps=rec.env_steps, completion_tokens=10, prompt_tokens=90,
                               wall_s=0.1))
    s = summarise(eps)["mountaincar"]
    assert s["episodes"] == 3 and s["success"] == pytest.approx(2 / 3) and not s["meets_threshold"]
    assert s["env_steps"] == sum(e.env_steps for e in eps) and s["env_steps"] > 200  # the failed 200 steps too
    page = episode_pages(eps, "t")
    assert "return 2 if obs[1] > 0 else 0" in page and "## mountaincar, seed 2: return -200" in page


def test_the_cli_writes_the_dataset_and_reads_seed_ranges(tmp_path) -> None:
    from typer.testing import CliRunner

    from polar.commands.app import app
    from polar.commands.code import _seeds

    assert _seeds("1000-1003") == [1000, 1001, 1002, 1003] and _seeds("4,7") == [4, 7]
    out = CliRunner().invoke(app, ["code", "dataset", "--out", str(tmp_path / "d"), "--per-task", "2",
                                   "--val-per-task", "0", "--tasks", "cartpole,maze"])
    assert out.exit_code == 0, out.output
    assert '"train": 4' in out.output and len(read_split(tmp_path / "d", "train")) == 4
    bad = CliRunner().invoke(app, ["code", "dataset", "--out", str(tmp_path / "e"), "--tasks", "chess"])
    assert bad.exit_code != 0 and "unknown code-mode task 'chess'" in str(bad.exception)
