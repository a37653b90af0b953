"""The README's figures are generated from committed files (benchmarks/README.md): a figure
edited by hand in README.md, in benchmarks/results/summary.md or in a result file fails here.
Regenerate with `python benchmarks/summary.py --readme README.md`. Also: each benchmark's
`figures(details)` on tiny synthetic results, and the suites' README table."""

from __future__ import annotations

import difflib
import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
sys.path.insert(0, str(BENCH))

import summary  # noqa: E402
from bench_results import Figure, result_doc  # noqa: E402

REGENERATE = "regenerate with `python benchmarks/summary.py --readme README.md`, never by hand"


def _diff(want: str, have: str, name: str) -> str:
    lines = difflib.unified_diff(have.splitlines(), want.splitlines(), f"{name} (committed)",
                                 f"{name} (generated)", lineterm="", n=0)
    return "\n".join(list(lines)[:40])


def test_readme_tables_are_generated_from_the_committed_results() -> None:
    text = (ROOT / "README.md").read_text()
    want = summary.render_readme(text)
    assert want == text, f"README.md: {REGENERATE}\n{_diff(want, text, 'README.md')}"
    assert "<!-- results:memory+doorkey:own-view -->" in text and "<!-- results:maze -->" in text


def _block_rows(text: str, spec: str) -> list[list[str]]:
    """The table rows (cells) of the README block `spec`."""
    body = text.split(f"<!-- results:{spec} -->\n", 1)[1].split(f"<!-- /results:{spec} -->", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in body.splitlines()
            if line.startswith("| ") and not line.startswith("| agent ")]


def test_the_headline_table_holds_own_view_arms_only_and_the_others_sit_below_it() -> None:
    """Issue 41: no arm of the README's headline comparison reads the simulator's hidden state;
    the full-grid and privileged arms are in their own table after it, none dropped."""
    text = (ROOT / "README.md").read_text()
    headline, below = "memory+doorkey:own-view", "doorkey:privileged"
    assert text.index(f"<!-- results:{headline} -->") < text.index(f"<!-- results:{below} -->")
    top, rest = _block_rows(text, headline), _block_rows(text, below)
    assert {r[1] for r in top} == {"view", "none"}, "a privileged or full arm in the headline table"
    assert {r[1].split(" ")[0] for r in rest} == {"full", "privileged"}
    assert {"symbolic-memory", "polar-planner-memory", "ppo-1m", "random"} <= {r[0] for r in top}
    assert "symbolic" in {r[0] for r in rest} and "symbolic" not in {r[0] for r in top}
    doorkey = json.loads((ROOT / "evals" / "results" / "doorkey" / "results.json").read_text())
    shown = {(r[0], r[2]) for r in top + rest}
    assert all((r["agent"], r["harness"]) in shown for r in doorkey["rows"]), "a doorkey arm in neither table"


def test_summary_md_is_generated_and_every_result_follows_the_convention() -> None:
    docs, other = summary.load_results(RESULTS)
    assert other == [], f"not in the result convention: {other}"
    want, have = summary.summary_markdown(docs, other), (RESULTS / "summary.md").read_text()
    assert want == have, f"summary.md: {REGENERATE}\n{_diff(want, have, 'summary.md')}"


def _module(benchmark: str) -> str:
    """The script that wrote a result: rl_vs_sb3_ppo -> rl_vs_sb3, rl_learning_ppo_cartpole -> rl_learning."""
    name = benchmark
    while not (BENCH / f"{name}.py").is_file():
        assert "_" in name, f"no benchmarks/*.py wrote {benchmark}"
        name = name.rsplit("_", 1)[0]
    return name


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.stem)
def test_result_figures_are_computed_from_their_details(path: Path) -> None:
    doc = json.loads(path.read_text())
    module = importlib.import_module(_module(doc["benchmark"]))
    assert [f.to_json() for f in module.figures(doc["details"])] == doc["figures"], (
        f"{path.name}: figures differ from {module.__name__}.figures(details)")


def _json(figs: list[Figure]) -> list[tuple]:
    return [(f["value"], f["goal"], f["better"], f["passed"]) for f in json.loads(json.dumps([f.to_json() for f in figs]))]


def test_rl_vs_sb3_figures() -> None:
    rl_vs_sb3 = importlib.import_module("rl_vs_sb3")
    ppo = {"ppo_cartpole": {"time_ratio_polar_over_sb3": [0.4, 0.5], "polar_return": [500.0, 490.0],
                            "sb3_return": [500.0, 500.0], "polar_wall_s": [1, 2], "sb3_wall_s": [3, 4]}}
    assert _json(rl_vs_sb3.figures(ppo)) == [
        (0.4, 0.45, "lower", True), (0.5, 0.45, "lower", False),
        (500.0, None, "higher", None), (490.0, None, "higher", None),
        (500.0, None, "higher", None), (500.0, None, "higher", None)]
    sac = {"sac_pendulum": {"time_ratio_polar_over_sb3": [0.5], "polar_return": [-150.0], "sb3_return": [-140.0],
                            "phases_ms_per_step": {"steps": 10, "polar": {"env": 1.0, "critic": 2.004},
                                                   "sb3": {"env": 3.0}}},
           "note": "kept"}
    figs = rl_vs_sb3.figures(sac)
    assert [f.value for f in figs] == [0.5, 3.0, 3.0, -150.0, -140.0]
    # SAC's ratio has no goal of its own: summary.py guards it against sac_floor_bench's floor.
    assert (figs[0].goal, figs[0].passed) == (None, None) and "profile of 10 steps" in figs[1].what


def test_rl_learning_figures_one_per_seed_against_the_target() -> None:
    rl_learning = importlib.import_module("rl_learning")
    figs = rl_learning.figures({"task": "ppo_doorkey5x5", "seeds": [3, 4],
                                "runs": [{"success_rate": 0.95}, {"success_rate": 0.5}]})
    assert [(f.value, f.goal, f.passed) for f in figs] == [(0.95, 0.9, True), (0.5, 0.9, False)]
    assert figs[1].what.endswith("seed 4")
    figs = rl_learning.figures({"task": "sac_pendulum", "seeds": [0], "runs": [{"mean_return": -180.0}]})
    assert (figs[0].goal, figs[0].passed, figs[0].unit) == (-200.0, True, "return")


def test_success_rate_figures_goal_only_where_claimed() -> None:
    goto = importlib.import_module("goto_skill")
    row = {"harness": "minigrid:MiniGrid-DoorKey-8x8-v0", "object": "key", "open_doors": False,
           "skill": {"episodes": 10, "rate": 0.8, "ci": [0.5, 0.95]}}
    figs = goto.figures({"policy": "goto@9", "rows": [{**row, "trained": True}, {**row, "trained": False}]})
    assert [(f.goal, f.passed, f.ci) for f in figs] == [(0.9, False, (0.5, 0.95)), (None, None, (0.5, 0.95))]
    assert figs[0].what == "goto@9 key success on MiniGrid-DoorKey-8x8, 10 episodes"
    maze = importlib.import_module("maze_planner")
    rows = [{"harness": "maze:PointMaze_Large-v3", "agent": a, "episodes": 20, "success": 0.95, "ci": [0.8, 1.0]}
            for a in ("planner+scripted (lookahead 2)", "scripted alone")]
    assert [(f.goal, f.passed) for f in maze.figures({"rows": rows})] == [(0.9, True), (None, None)]
    skills = importlib.import_module("skill_success")
    m = {"harness": "maze_large_waypoints", "args": {}, "episodes": 200, "rate": 0.965, "ci_low": 0.93,
         "ci_high": 0.983, "successes": 193, "seed": 1000, "measured_at": "2026-01-01T00:00:00+00:00"}
    fig, = skills.figures({"rows": [{"skill": "reach@1", "trained": False, "measurement": m}]})
    assert (fig.value, fig.goal, fig.ci) == (0.965, None, (0.93, 0.983))
    assert fig.what == "reach@1 success on maze_large_waypoints (never trained on), 200 episodes"


def test_llm_latency_figures_goal_on_the_median_with_reuse() -> None:
    llm = importlib.import_module("llm_latency")
    arm = {"median_s": 1.2, "decisions_per_s": 0.8, "valid": 1.0}
    figs = llm.figures({"model": "m", "engine": "e", "reuse": arm, "no_reuse": {**arm, "median_s": 2.4},
                        "reuse_logprobs": {**arm, "valid": 0.9}, "no_reuse_over_reuse_median": 2.0,
                        "prefill": {"prompt_tokens": 100, "prompt_tokens_per_s": 50.0},
                        "decode": {"completion_tokens": 48, "completion_tokens_per_s": 9.0}})
    assert [(f.value, f.goal, f.passed) for f in figs[:3]] == [(1.2, 1.5, True), (2.4, None, None), (1.2, None, None)]
    assert [f.value for f in figs[3:]] == [2.0, 0.8, 50.0, 9.0, 0.9]


def test_rl_ray_connector_and_planner_overhead_figures() -> None:
    ray = importlib.import_module("rl_ray")
    figs = ray.figures({"init": {"polar-lean": {"init_s": 2.345, "rss_mb": 300.4}},
                        "rollout_steps_per_s": {"serial": 1000.0, "ray_1": 800.0, "ray_2": 1500.0}})
    assert [f.value for f in figs] == [2.35, 300, 1000, 0.8, 1.5]
    conn = importlib.import_module("connector_bench")
    figs = conn.figures({"steps_per_s_median": {"stdio": 14000, "unix": 1, "in_process": 2}})
    assert (figs[0].goal, figs[0].passed) == (15000, False)
    po = importlib.import_module("planner_overhead")
    figs = po.figures({"overhead_cached_ms": 0.5, "overhead_live_minus_raw_ms": 4.0, "goal_ms": 5.0,
                       "live": {"median_ms": 4.5}})
    assert [(f.value, f.passed) for f in figs] == [(0.5, True), (4.0, None), (4.5, None)]


def test_result_doc_keeps_a_converted_runs_machine_and_summary_marks_it() -> None:
    machine = {"measured_at": "2026-01-01T00:00:00Z", "cpus": None, "loadavg": None}
    doc = result_doc("x", "python benchmarks/x.py", [Figure("rate", 0.5, "rate", 0.9, ci=(0.2, 0.8))],
                     {"converted": {"measured_at": "commit date"}}, machine)
    assert doc["measured_at"] == "2026-01-01T00:00:00Z" and doc["figures"][0]["ci"] == [0.2, 0.8]
    md = summary.summary_markdown([doc], [])
    assert "| x | rate | 0.500 [0.200, 0.800] rate | >= 0.9 | FAIL | `python benchmarks/x.py` |" in md
    assert "| x | 2026-01-01T00:00:00Z (commit date) | ? | ? |" in md


STORED = {
    "created": "2026-01-01T00:00:00+00:00", "episodes_per_cell": 20, "missing_cells": ["rl/H/seed-1"],
    "rows": [{"agent": "planner", "harness": "H", "seeds": 5, "train_env_steps": 1_001_472, "eval_env_steps": 1725,
              "success": {"value": 0.96, "lo": 0.9, "hi": 0.98, "n": 100}, "llm_calls": 3, "llm_cached": 1,
              "tokens": 120, "failures": {"skill-failure": 4}}],
    "totals": [{"agent": "planner", "train_env_steps": 1_001_472,
                "success": {"value": 0.96, "lo": 0.9, "hi": 0.98, "n": 100}},
               {"agent": "rl", "train_env_steps": 10_000, "success": {"value": 0.5, "lo": 0.3, "hi": 0.7, "n": 20}}],
}


def test_suite_block_from_a_stored_results_json(tmp_path: Path) -> None:
    from polar.evals.report import brief_markdown

    md = brief_markdown(STORED)
    assert "| planner | H | 5 | 96% [90, 98] | 1.00M | 1725 | 3 (1 cached) | 120 | skill-failure 4 |" in md
    assert "observes" not in md  # a results.json from before the label
    # an arm with cells not run says its total is over fewer cells
    assert ("Totals over all harnesses: planner 96% [90, 98] for 1.00M train env steps charged; rl 50% [30, 70] "
            "for 10k train env steps charged (over fewer tasks or seeds: 1 of its cells not run).") in md
    assert "**Incomplete**: 1 cell(s) not run: rl/H/seed-1." in md
    labelled = {**STORED, "rows": [{**STORED["rows"][0], "observes": "full", "decides_from": "privileged"}]}
    assert "| planner | full (decides from privileged) | H |" in brief_markdown(labelled)

    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / "results.json").write_text(json.dumps(STORED))
    from readme_tables import render_suites

    text = "# R\n\nprose\n<!-- results:s1 -->\nold | 1% |\n<!-- /results:s1 -->\nafter\n"
    out = render_suites(text, tmp_path)
    assert out == f"# R\n\nprose\n<!-- results:s1 -->\n{md}\n<!-- /results:s1 -->\nafter\n"
    assert render_suites(out, tmp_path) == out


def test_rl_device_figures_each_device_and_cuda_over_cpu() -> None:
    dev = importlib.import_module("rl_device")
    cpu_only = {"cuda": False, "pixels": "crafter", "planner_rl_round": {},
                "ppo_pixels": {"cpu": {"env_steps_per_s": 140.0}}}
    assert [(f.what, f.value) for f in dev.figures(cpu_only)] == [
        ("PPO on pixels (crafter), env steps/s, learner on cpu", 140.0)]
    both = {"cuda": True, "pixels": "minigrid",
            "ppo_pixels": {"cpu": {"env_steps_per_s": 200.0}, "cuda": {"env_steps_per_s": 500.0}},
            "planner_rl_round": {"cpu": {"wall_s": 600.0}, "cuda": {"wall_s": 150.0}}}
    assert [f.value for f in dev.figures(both)] == [200.0, 500.0, 600.0, 150.0, 2.5, 0.25]


def _doc(name: str, *figs: tuple[str, float, float | None]) -> dict:
    return result_doc(name, f"python benchmarks/{name}.py", [Figure(w, v, "x", g, "lower") for w, v, g in figs],
                      machine={"measured_at": "2026-01-01T00:00:00Z", "cpus": 2, "loadavg": [0.1, 0.1, 0.1]})


def test_a_guarded_figure_is_checked_against_the_committed_floor_shown_beside_it() -> None:
    guard = summary.Guard("speed", "A / B wall time", "floor_bench", "floor ratio", 0.75)
    floor = _doc("floor_bench", ("floor ratio: products alone / B", 0.5, None))
    speed = _doc("speed", ("A / B wall time, round 0", 0.6, None), ("A / B wall time, round 1", 0.7, None),
                 ("A ms per step", 7.0, None))
    guarded = {f["what"]: f for d in summary.apply_guards([floor, speed], (guard,)) for f in d["figures"]}
    assert [(f["goal"], f["passed"], f.get("floor")) for f in guarded.values()] == [
        (None, None, None), (0.667, True, 0.5), (0.667, False, 0.5), (None, None, None)]
    assert speed["figures"][0]["goal"] is None  # the result docs themselves are not changed
    assert summary._value(guarded["A / B wall time, round 0"]) == "0.6 x (floor 0.5 x)"
    assert summary._goal(guarded["A / B wall time, round 1"]) == "<= 0.667 (floor / 0.75)"
    with pytest.raises(SystemExit, match="no figure containing 'floor ratio' in floor_bench.json"):
        summary.apply_guards([speed], (guard,))
    own_goal = _doc("speed", ("A / B wall time, round 0", 0.6, 0.8))
    with pytest.raises(SystemExit, match="has a goal of its own and a guard"):
        summary.apply_guards([floor, own_goal], (guard,))


def test_the_sac_ratio_is_guarded_in_the_committed_summary() -> None:
    # The SAC ratio's row carries the floor from sac_floor_bench.json and the guard's goal.
    rows = [r for r in summary.summary_rows((RESULTS / "summary.md").read_text())
            if r[0] == "rl_vs_sb3_sac" and "Polar / Stable-Baselines3 wall time" in r[1]]
    docs, _ = summary.load_results(RESULTS)
    floor = next(f["value"] for d in docs if d["benchmark"] == "sac_floor_bench" for f in d["figures"]
                 if "floor ratio: matrix products, env step and replay sample alone" in f["what"])
    guard, = summary.GUARDS
    assert len(rows) == 2 and all(f"(floor {floor} x)" in r[2] for r in rows)
    assert all(r[3] == f"<= {guard.goal(floor)} (floor / {guard.fraction})" for r in rows)


def test_merged_blocks_keep_one_information_class_and_show_each_agent_once(tmp_path: Path) -> None:
    from readme_tables import merged, render_suites

    row = STORED["rows"][0]
    suites = {
        "a": [("sym", "privileged"), ("llm", "full"), ("ppo", "view"), ("random", "none")],
        "b": [("sym-mem", "view"), ("random", "none")],
    }
    for name, agents in suites.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps({
            **STORED, "missing_cells": [], "created": f"t-{name}",
            "rows": [{**row, "agent": a, "observes": o, "decides_from": o} for a, o in agents],
            "totals": [{**STORED["totals"][0], "agent": a} for a, _ in agents]}))
    own = merged(["b", "a"], "own-view", tmp_path)
    assert [r["agent"] for r in own["rows"]] == ["sym-mem", "ppo", "random"]  # random once, last
    assert [t["agent"] for t in own["totals"]] == ["sym-mem", "ppo", "random"]
    assert own["created"] == "t-b (b), t-a (a)"
    assert [r["agent"] for r in merged(["a"], "privileged", tmp_path)["rows"]] == ["sym", "llm"]
    text = "<!-- results:b+a:own-view -->\n<!-- /results:b+a:own-view -->\n"
    out = render_suites(text, tmp_path)
    assert "| sym-mem | view | H |" in out and "| sym | " not in out and "| llm | " not in out
    with pytest.raises(SystemExit, match="unknown part 'mine'"):
        merged(["a"], "mine", tmp_path)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results.json").write_text(json.dumps(STORED))
    with pytest.raises(SystemExit, match="no `observes` label"):
        merged(["old"], "own-view", tmp_path)
