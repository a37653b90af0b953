"""Generate-and-test at inference (polar/evals/code_select.py): programs tried on selection
episodes before the episode, the best one plays it, every selection step charged.

The selection function gets programs directly (a good and a bad controller: real gate, real
process sandbox, real envs); the agent's record of a selection episode is checked with a
scripted server where every program is refused (a fault path), and end to end with the served
code-planner (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from polar.evals.code_agent import CodeAgent
from polar.evals.code_runner import run_program
from polar.evals.code_select import SELECTION_SEED_BASE, passes, select_program, selection_seeds
from polar.evals.code_tasks import TASKS
from polar.evals.suite import CodeAgentConfig, load_suite
from polar.harnesses.registry import make_harness
from polar.llm.client import LLMClient
from polar.llm.settings import LLMSettings
from polar.sandboxes.profiles import SandboxProfile
from tests.llm.engine import free_port, require_engine, require_model
from tests.llm_server import Reply, ScriptedLLMServer

PROCESS = SandboxProfile()
GOOD_CARTPOLE = "def act(obs):\n    x, x_dot, angle, angle_dot = obs\n    return 1 if angle + 0.5 * angle_dot > 0 else 0\n"
BAD_CARTPOLE = "def act(obs):\n    return 1\n"


def test_the_good_program_is_chosen_and_every_selection_step_is_counted() -> None:
    task = TASKS["cartpole"]
    seeds = selection_seeds(1000, 2)
    sel = select_program(task, [BAD_CARTPOLE, GOOD_CARTPOLE], seeds, PROCESS)
    assert sel.chosen == 1 and len(sel.candidates) == 2
    bad, good = sel.candidates
    assert [e.seed for e in bad.episodes] == [e.seed for e in good.episodes] == seeds
    assert not passes(bad) and passes(good) and good.mean_return == 500.0 > bad.mean_return
    assert sel.env_steps == bad.env_steps + good.env_steps == sum(e.steps for c in sel.candidates for e in c.episodes)
    assert bad.env_steps > 0 and good.env_steps == 1000


def test_sampling_stops_at_the_first_program_that_passes_the_filter() -> None:
    asked: list[int] = []

    def replies():
        for i, p in enumerate([GOOD_CARTPOLE, BAD_CARTPOLE, GOOD_CARTPOLE]):
            asked.append(i)
            yield p

    sel = select_program(TASKS["cartpole"], replies(), selection_seeds(1000, 1), PROCESS)
    assert sel.chosen == 0 and asked == [0] and len(sel.candidates) == 1


def test_without_a_passing_program_the_best_selection_return_plays_ties_to_the_first() -> None:
    task = TASKS["mountaincar"]  # none of these reach the flag
    refused, idle, left, right = ("import os\ndef act(obs):\n    return 1\n", "def act(obs):\n    return 1\n",
                                  "def act(obs):\n    return 0\n", "def act(obs):\n    return 2\n")
    sel = select_program(task, [refused, idle, left, right], selection_seeds(7, 1), PROCESS)
    assert sel.candidates[0].gate != "ok" and sel.candidates[0].env_steps == 0
    assert [c.mean_return for c in sel.candidates[1:]] == [-200.0] * 3
    assert sel.chosen == 1  # a three-way tie: the first sampled that ran
    pend = TASKS["pendulum"]  # returns differ: the highest mean plays, even sampled last
    still, spin = "def act(obs):\n    return [0.0]\n", "def act(obs):\n    return [2.0]\n"
    sel = select_program(pend, [spin, still], selection_seeds(3, 2), PROCESS)
    want = max(range(2), key=lambda i: sel.candidates[i].mean_return)
    assert sel.chosen == want and sel.candidates[0].mean_return != sel.candidates[1].mean_return
    assert select_program(task, [refused], [SELECTION_SEED_BASE], PROCESS).chosen is None


def test_selection_seeds_are_disjoint_from_every_seed_code_mode_uses() -> None:
    heldout = set(range(1000, 1020))
    used = heldout | set(range(100, 105)) | set(range(0, 3)) | set(range(10_000, 20_000))
    for n in (1, 2, 4):
        sel = [s for e in heldout for s in selection_seeds(e, n)]
        assert len(set(sel)) == len(sel) == 20 * n and not set(sel) & used
    assert selection_seeds(1000, 2) == [202_000, 202_001]
    with pytest.raises(ValueError, match="n must be >= 1"):
        selection_seeds(1000, 0)
    with pytest.raises(ValueError, match="episode seed must be in"):
        selection_seeds(SELECTION_SEED_BASE, 1)


def test_an_agent_whose_programs_are_all_refused_charges_nothing_and_records_each() -> None:
    config = CodeAgentConfig(name="sel", model="smollm2-135m", port=1, k=2, sandbox="default", select_episodes=2)
    agent = CodeAgent(config)
    agent.task = TASKS["acrobot"]
    with ScriptedLLMServer() as server, make_harness("code_acrobot") as harness:
        agent.client = LLMClient(LLMSettings(model="openai/scripted", api_base=server.url, timeout_s=10.0))
        server.push(Reply.text("Here is prose."), Reply.text("import os\ndef act(obs):\n    return 0\n"))
        rec = agent.episode(harness, "swing up", 1000, None, "e1")
        assert server.request_count == 2
    assert not rec.success and rec.episode_return == TASKS["acrobot"].lowest_return and rec.env_steps == 0
    assert rec.extra["programs"] == 2 and rec.extra["refused"] == 2 and rec.extra["chosen"] is None
    assert rec.extra["selection_seeds"] == [202_000, 202_001] and "2 programs, all refused" in rec.failure_detail
    assert [d.decision["role"] for d in rec.decisions] == ["candidate", "candidate"]
    assert all(len(d.outcomes) == 2 and d.llm_calls for d in rec.decisions)


@pytest.mark.slow
def test_a_suite_cell_with_selection_charges_the_selection_steps_and_shows_every_program(tmp_path: Path) -> None:
    require_engine()
    require_model("smollm2-135m")
    suite = {"name": "code-select-test", "seeds": [0], "episodes": 1, "eval_seed": 1000, "trace": 0, "workers": 0,
             "agents": [{"name": "sel", "kind": "code", "model": "code-planner", "port": free_port(), "k": 2,
                         "temperature": 0.7, "sandbox": "default", "select_episodes": 1}],
             "harnesses": [{"id": "code_mountaincar", "name": "mountaincar"}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    from polar.evals.pages import cell_page
    from polar.evals.runner import run_cells

    (res,) = run_cells(load_suite(tmp_path / "s.yaml"), tmp_path / "out", progress=False).results
    (e,) = res.episodes
    assert res.prep.info["select_episodes"] == 1
    cands = [d for d in e.decisions if d.decision["role"] == "candidate"]
    assert 1 <= len(cands) == e.llm_calls == e.extra["programs"] <= 2
    assert all(o.reason.startswith("selection episode, seed 201000:") for d in cands for o in d.outcomes)
    (played,) = [d for d in e.decisions if d.decision["role"] == "played"]
    assert played.decision["source"] == cands[e.extra["chosen"]].decision["source"] and not played.llm_calls
    assert e.extra["selection_env_steps"] == sum(d.env_steps for d in cands) > 0
    assert e.env_steps == e.extra["selection_env_steps"] + played.env_steps  # charged to the arm
    assert played.outcomes[0].steps == played.env_steps > 0
    page = cell_page(res, "view", "code", 3)
    assert page.count("selection episode, seed 201000") == len(cands) and "played by program" in page


def test_the_summary_and_the_pages_count_and_show_every_candidate() -> None:
    from polar.evals.code_eval import CodeEpisode, episode_pages, summarise

    task, seeds = TASKS["cartpole"], selection_seeds(1000, 1)
    sel = select_program(task, ["import os\ndef act(obs):\n    return 1\n", BAD_CARTPOLE, GOOD_CARTPOLE], seeds, PROCESS)
    played = run_program(task, sel.candidates[sel.chosen].program, [1000], PROCESS)
    run = played.episodes[0]
    ep = CodeEpisode(task="cartpole", seed=1000, programs=[played], call_ids=["a", "b", "c"], ret=run.ret,
                     success=run.success, env_steps=sel.env_steps + played.env_steps, completion_tokens=30,
                     prompt_tokens=270, wall_s=0.1, selection_seeds=seeds, candidates=sel.candidates,
                     chosen=sel.chosen)
    s = summarise([ep])["cartpole"]
    assert s["programs"] == 3 and s["refused"] == 1 and s["selection_env_steps"] == sel.env_steps > 500
    assert s["env_steps"] == sel.env_steps + 500 and s["success"] == 1.0
    page = episode_pages([ep], "t")
    assert "played: program 3" in page and "refused by the gate" in page and "seed 201000: return 500" in page
