"""`compare_prompts`: one suite per template variant, through a real LLM planner over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from polar.errors import ConfigError
from polar.evals.prompts import compare_prompts, parse_variants
from tests.llm_server import Reply, ScriptedLLMServer

ROOT = Path(__file__).resolve().parents[2]
GIVE_UP = {"kind": "finish", "success": False, "reason": "scripted"}


def _suite(tmp_path: Path, server: ScriptedLLMServer, episodes: int, cache_dir: str | None = None,
           extra_agents: list[dict] | None = None) -> dict:
    """A one-harness suite whose planner agent asks the scripted server."""
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump({
        "backend": "llm", "model": "openai/scripted", "api_base": server.url, "mode": "skill",
        "timeout_s": 5, "retries": {"max_attempts": 1}, "structured_output": "none",
        "cache_dir": cache_dir, "record_path": None,
    }))
    return {"name": "pv", "agents": [{"name": "llm", "kind": "planner", "planner": str(profile)},
                                     *(extra_agents or [])],
            "harnesses": [{"id": "minigrid:MiniGrid-DoorKey-5x5-v0", "max_steps": 20}],
            "seeds": [0], "episodes": episodes}


def test_parse_variants() -> None:
    assert parse_variants(["a=planner_skill", "b=x/y.j2"]) == {"a": "planner_skill", "b": "x/y.j2"}
    with pytest.raises(ConfigError, match="NAME=TEMPLATE"):
        parse_variants(["planner_skill"])
    with pytest.raises(ConfigError, match="given twice"):
        parse_variants(["a=x", "a=y"])


def test_variants_side_by_side_and_the_cache_makes_repeats_free(tmp_path: Path) -> None:
    terse = tmp_path / "terse.j2"
    terse.write_text((ROOT / "prompts" / "planner_skill.j2").read_text()
                     .replace("name: planner_skill", "name: terse") + "\nAnswer in as few words as you can.\n")
    with ScriptedLLMServer(default=Reply.decision(GIVE_UP, usage=(100, 7))) as server:
        suite = _suite(tmp_path, server, 2, str(tmp_path / "cache"), [{"name": "random", "kind": "random"}])
        variants = {"base": "planner_skill", "terse": str(terse)}
        rows = compare_prompts(suite, variants, tmp_path / "a", workers=0, quiet=True)
        assert server.request_count == 4  # 2 variants x 2 episodes, one decision each
        sent = [r.messages[-1]["content"] for r in server.requests]
        assert all("few words" not in s for s in sent[:2]) and all("few words" in s for s in sent[2:])

        again = compare_prompts(suite, variants, tmp_path / "b", workers=0, quiet=True)
        assert server.request_count == 4  # every call replayed from the cache: no new request
    assert [(r.variant, r.agent) for r in rows] == [("base", "llm"), ("terse", "llm")]
    for r in rows:
        assert (r.llm_calls, r.cached_calls, r.tokens) == (2, 0, 214)
        assert r.failures == {"planner-gave-up": 2} and r.mean_latency_s > 0
    for r in again:
        assert (r.llm_calls, r.cached_calls, r.tokens) == (2, 2, 214)  # same ledger, all replayed
        assert r.live_cost_usd == 0.0
    table = (tmp_path / "a" / "prompts.md").read_text()
    assert "## base (`planner_skill`)" in table and (tmp_path / "a" / "terse" / "report.html").exists()
    assert "+Answer in as few words as you can." in table  # the diff of the rendered prompts


def test_editing_a_template_reruns_its_variant_only(tmp_path: Path) -> None:
    terse = tmp_path / "terse.j2"
    body = (ROOT / "prompts" / "planner_skill.j2").read_text().replace("name: planner_skill", "name: terse")
    terse.write_text(body)
    with ScriptedLLMServer(default=Reply.decision(GIVE_UP, usage=(100, 7))) as server:
        suite = _suite(tmp_path, server, 1)
        variants = {"base": "planner_skill", "terse": str(terse)}
        first = compare_prompts(suite, variants, tmp_path / "out", workers=0, quiet=True)
        assert [(r.cells_run, r.cells_reused) for r in first] == [(1, 0), (1, 0)]
        assert server.request_count == 2

        terse.write_text(body + "\nAnswer in as few words as you can.\n")  # same path, new content
        second = compare_prompts(suite, variants, tmp_path / "out", workers=0, quiet=True)
        assert [(r.variant, r.cells_run, r.cells_reused) for r in second] == [("base", 0, 1), ("terse", 1, 0)]
        assert server.request_count == 3 and "few words" in server.requests[-1].messages[-1]["content"]

        fresh = compare_prompts(suite, variants, tmp_path / "out", workers=0, quiet=True, fresh=True)
        assert [(r.cells_run, r.cells_reused) for r in fresh] == [(1, 0), (1, 0)]
        assert server.request_count == 5


def test_compare_shows_cases_and_diffs_in_80_columns_and_flags_a_broken_template(tmp_path: Path) -> None:
    from rich.console import Console

    terse = tmp_path / "terse.j2"
    terse.write_text((ROOT / "prompts" / "planner_skill.j2").read_text()
                     .replace("name: planner_skill", "name: terse").replace("Skills:", "Your skills:"))
    broken = tmp_path / "broken.j2"
    broken.write_text("---\nname: broken\nmode: skill\ninputs: [task]\n---\n{{ task }} {% if %}\n")
    with ScriptedLLMServer(default=Reply.decision(GIVE_UP, usage=(100, 7))) as server:
        suite = _suite(tmp_path, server, 2)
        console = Console(width=80, record=True, force_terminal=False)
        rows = compare_prompts(suite, {"base": "planner_skill", "broken": str(broken), "terse": str(terse)},
                               tmp_path / "out", workers=0, console=console)
        assert server.request_count == 4  # base and terse ran; the broken variant sent nothing
    assert [(r.variant, r.error is None) for r in rows] == [("base", True), ("broken", False), ("terse", True)]
    assert "Jinja syntax error" in rows[1].error
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "BROKEN: TemplateError" in text
    assert "llm / DoorKey-5x5 / seed 0 / #1" in text
    assert "base   planner-gave-up, 0 steps: finish(success=False)" in text
    assert "-Skills:" in text and "+Your skills:" in text  # the rendered prompts' difference
    saved = json.loads((tmp_path / "out" / "prompts.json").read_text())
    assert len(saved["cases"]) == 2 and set(saved["cases"][0]["outputs"]) == {"base", "terse"}
