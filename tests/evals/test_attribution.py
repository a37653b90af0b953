"""Failure attribution through whole suites: real planners over a deliberately broken skill.

The skill library holds the MiniGrid primitives plus a `goto` policy skill whose network was
never trained (it cannot reach anything within its step budget). Its provenance says it cost
12345 env steps to "pretrain", which the ledger must charge once per planner agent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from polar.domains.minigrid.primitives import install_primitives
from polar.evals.runner import run_cells, run_suite
from polar.harnesses.registry import make_harness
from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.skills.store import SkillLibrary
from tests.llm_server import Reply, ScriptedLLMServer

HARNESS = "minigrid:MiniGrid-DoorKey-5x5-v0"
GOTO_KEY = {"kind": "skill", "skill": "goto", "args": {"object": "key", "color": "yellow"}}
SHIPPED_GOTO = json.loads((Path(__file__).resolve().parents[2] / "skills/goto/4/manifest.json").read_text())


@pytest.fixture(scope="module")
def broken_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("skills")
    lib = SkillLibrary(root)
    install_primitives(lib)
    h = make_harness(HARNESS)
    torch.manual_seed(0)
    untrained = make_policy("ppo", h.observation_space, h.action_space, NetworkConfig(hidden=[16]),
                            observation_kinds=h.spec.extra["observation_kinds"])
    h.close()
    lib.register_policy(
        untrained, name="goto", description="Go to an object (deliberately untrained: broken).",
        harnesses=["minigrid:*"],
        # the interface of the shipped goto (object, colour and cell), which the library-driven
        # symbolic planner chains through unlock's `facing(door,...)` precondition
        parameters=SHIPPED_GOTO["parameters"], preconditions=SHIPPED_GOTO["preconditions"],
        effects=SHIPPED_GOTO["effects"],
        termination={"predicates": ["facing({object},{color},{x},{y})"]}, step_budget=16,
        provenance={"env_steps": 12345, "trained_on": [HARNESS]},
    )
    return root


def test_symbolic_planner_over_a_broken_skill(broken_library: Path, tmp_path: Path) -> None:
    suite = {
        "name": "broken-skill",
        "agents": [{"name": "symbolic", "kind": "planner", "planner": "symbolic", "skills": str(broken_library)},
                   {"name": "random", "kind": "random"}],
        "harnesses": [{"id": HARNESS, "max_steps": 100}],
        "seeds": 2,
        "episodes": 2,
    }
    res = run_suite(suite, tmp_path, progress=False)
    rows = {r.agent: r for r in res.rows}
    sym = rows["symbolic"]
    # every episode fails, and every failure is the skill's
    assert sym.success.value == 0.0 and sym.failures == {"skill-failure": 4}
    assert sym.train_env_steps == 12345
    assert rows["random"].failures == {"step-limit": 4}
    totals = {t.agent: t for t in res.totals}
    assert totals["symbolic"].train_env_steps == 12345  # charged once, not per cell
    assert totals["random"].train_env_steps == 0

    cells = run_cells(suite, tmp_path, progress=False).results  # all reused from disk
    episodes = [ep for c in cells if c.cell.agent == "symbolic" for ep in c.episodes]
    assert sym.eval_env_steps == sum(ep.env_steps for ep in episodes)
    for ep in episodes:
        # the untrained goto stumbles onto the key now and then (a pickup follows), but every
        # episode ends with three goto tries that each spend the 16-step budget, then gives up
        *tries, give_up = ep.decisions[-4:]
        assert [(d.decision.get("skill"), d.env_steps) for d in tries] == [("goto", 16)] * 3, ep.decisions
        assert give_up.decision.get("kind") == "finish"
        assert "goto(color=yellow, object=" in ep.failure_detail and "failed 3 times in a row" in ep.failure_detail


def test_llm_planner_failures_are_attributed(broken_library: Path, tmp_path: Path) -> None:
    with ScriptedLLMServer() as server:
        server.push(
            # agent `llm`, episode 0: calls the broken skill, then gives up -> skill-failure
            Reply.decision(GOTO_KEY), Reply.decision({"kind": "finish", "success": False}),
            # episode 1: a reply that is no decision at all -> planner-parse
            Reply.text("I would walk to the key first, then open the door."),
            # agent `llm-1call` (one LLM call per episode): the second decision is over budget
            Reply.decision(GOTO_KEY), Reply.decision(GOTO_KEY),
        )
        profile = tmp_path / "scripted.yaml"
        profile.write_text(yaml.safe_dump({
            "backend": "llm", "model": "openai/scripted", "api_base": server.url, "mode": "skill",
            "timeout_s": 5, "retries": {"max_attempts": 1}, "repair_rounds": 0,
            "structured_output": "none", "cache_dir": None, "record_path": None,
        }))
        suite = {
            "name": "llm-causes",
            "agents": [
                {"name": "llm", "kind": "planner", "planner": str(profile), "skills": str(broken_library)},
                {"name": "llm-1call", "kind": "planner", "planner": str(profile),
                 "skills": str(broken_library), "budget": {"llm_calls": 1}},
            ],
            "harnesses": [{"id": HARNESS}],
            "seeds": [0],
            "episodes": 2,
        }
        res = run_suite(suite, tmp_path / "out", progress=False)
        assert server.request_count == 5
    rows = {r.agent: r for r in res.rows}
    assert rows["llm"].failures == {"planner-parse": 1, "skill-failure": 1}
    assert rows["llm-1call"].failures == {"budget": 2}
    # the ledger counts what the server billed: (10 prompt + 5 completion) tokens per call
    assert (rows["llm-1call"].llm_calls, rows["llm-1call"].tokens) == (2, 30)
    assert rows["llm"].train_env_steps == 12345
    assert (rows["llm"].llm_calls, rows["llm"].tokens) == (3, 45)  # the unparseable reply is billed too


def test_tokens_of_an_unparseable_reply_are_charged(broken_library: Path, tmp_path: Path) -> None:
    with ScriptedLLMServer() as server:
        server.push(Reply.text("no JSON here"))
        profile = tmp_path / "scripted.yaml"
        profile.write_text(yaml.safe_dump({
            "backend": "llm", "model": "openai/scripted", "api_base": server.url, "mode": "skill",
            "timeout_s": 5, "retries": {"max_attempts": 1}, "repair_rounds": 0,
            "structured_output": "none", "cache_dir": None, "record_path": None,
        }))
        suite = {"name": "parse", "agents": [{"name": "llm", "kind": "planner", "planner": str(profile),
                                              "skills": str(broken_library)}],
                 "harnesses": [{"id": HARNESS}], "seeds": [0], "episodes": 1}
        res = run_suite(suite, tmp_path / "out", progress=False)
    [row] = res.rows
    assert row.failures == {"planner-parse": 1}
    assert (row.llm_calls, row.tokens) == (1, 15)
