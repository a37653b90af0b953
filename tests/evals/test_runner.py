"""The runner on real harnesses with the random agent: determinism, resume, Ray, attribution."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar.evals.cells import cell_path
from polar.evals.metrics import compute_results
from polar.evals.runner import run_cells, run_suite, submit_order
from polar.evals.suite import load_suite

SUITE = {
    "name": "resume",
    "agents": [{"name": "rnd", "kind": "random"}, {"name": "rnd2", "kind": "random"}],
    "harnesses": [
        {"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 40},
        {"id": "minigrid:MiniGrid-DoorKey-5x5-v0", "max_steps": 30},
    ],
    "seeds": 2,
    "episodes": 3,
}


def _key(ep) -> tuple:
    return (ep.seed, ep.success, ep.episode_return, ep.env_steps, ep.failure_cause)


def test_resume_runs_only_missing_cells(tmp_path: Path) -> None:
    suite = load_suite(SUITE)
    half = {c.slug for c in suite.cells()[::2]}
    first = run_cells(suite, tmp_path, progress=False, only=lambda c: c.slug in half)
    assert {c.slug for c in first.ran} == half and not first.skipped
    mtimes = {s: cell_path(tmp_path, c).stat().st_mtime_ns for c in first.ran for s in [c.slug]}
    for c in suite.cells():
        assert cell_path(tmp_path, c).exists() == (c.slug in half)

    second = run_cells(suite, tmp_path, progress=False)
    assert {c.slug for c in second.ran} == {c.slug for c in suite.cells()} - half
    assert {c.slug for c in second.skipped} == half
    for c in first.ran:  # finished cells were not rewritten
        assert cell_path(tmp_path, c).stat().st_mtime_ns == mtimes[c.slug]
    assert len(second.results) == len(suite.cells())

    third = run_cells(suite, tmp_path, progress=False)
    assert not third.ran and len(third.skipped) == len(suite.cells())

    # editing one agent invalidates that agent's cells only
    edited = {**SUITE, "harnesses": [SUITE["harnesses"][0], {**SUITE["harnesses"][1], "max_steps": 31}]}
    fourth = run_cells(edited, tmp_path, progress=False)
    assert {c.harness for c in fourth.ran} == {"DoorKey-5x5"}
    assert len(fourth.ran) == 4


def test_a_corrupt_cell_file_is_run_again(tmp_path: Path) -> None:
    suite = load_suite({**SUITE, "agents": SUITE["agents"][:1], "seeds": [0]})
    run_cells(suite, tmp_path, progress=False)
    victim = suite.cells()[0]
    cell_path(tmp_path, victim).write_text("{ half a json")
    again = run_cells(suite, tmp_path, progress=False)
    assert [c.slug for c in again.ran] == [victim.slug]


def test_episodes_are_deterministic_per_seed(tmp_path: Path) -> None:
    a = run_cells(SUITE, tmp_path / "a", progress=False)
    b = run_cells(SUITE, tmp_path / "b", progress=False)
    ka = [[_key(e) for e in r.episodes] for r in a.results]
    kb = [[_key(e) for e in r.episodes] for r in b.results]
    assert ka == kb
    # different cell seeds face different start states and action draws
    assert ka[0] != ka[1]


def test_ray_workers_give_the_same_results_as_in_process(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    suite = {**SUITE, "agents": SUITE["agents"][:1]}
    local = run_cells(suite, tmp_path / "local", progress=False)
    try:
        remote = run_cells(suite, tmp_path / "ray", workers=2, progress=False)
    finally:
        ray.shutdown()
    assert len(remote.ran) == 4
    assert [[_key(e) for e in r.episodes] for r in local.results] == \
        [[_key(e) for e in r.episodes] for r in remote.results]


def test_cells_at_once_play_on_threads_with_the_same_results(tmp_path: Path, monkeypatch) -> None:
    """`cells_at_once`: in-process cells overlap in time (a planner-RL group's episodes, one
    agent per cell, against one server with as many slots), every cell is written, and the
    results are those of one cell at a time."""
    import threading
    import time

    from polar.evals import runner

    local = run_cells(SUITE, tmp_path / "one", progress=False)
    real, lock, running, peak = runner.run_cell, threading.Lock(), [0], [0]

    def counted(*a, **kw):  # noqa: ANN002, ANN003, ANN202 - the real cell, its overlap counted
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            time.sleep(0.2)  # a random agent's cell is too quick to overlap by itself
            return real(*a, **kw)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(runner, "run_cell", counted)
    threaded = run_cells(SUITE, tmp_path / "three", progress=False, cells_at_once=3)
    assert peak[0] == 3 and len(threaded.ran) == 8
    assert all(cell_path(tmp_path / "three", c).exists() for c in load_suite(SUITE).cells())
    assert [[_key(e) for e in r.episodes] for r in local.results] == \
        [[_key(e) for e in r.episodes] for r in threaded.results]


def test_failure_causes_from_real_episodes(tmp_path: Path) -> None:
    """Random play on DoorKey with a short cap fails by step-limit; every failed episode has a
    cause and the counts add up in the results."""
    results = run_suite(SUITE, tmp_path, progress=False)
    for row in results.rows:
        assert row.episodes == 6
        failed = round(row.episodes * (1 - row.success.value))
        assert sum(row.failures.values()) == failed
        if row.harness == "DoorKey-5x5":
            assert row.failures == {"step-limit": 6}
            assert row.eval_env_steps == 6 * 30
    assert results.ran and not results.missing_cells


def test_compute_results_counts_every_cell(tmp_path: Path) -> None:
    summary = run_cells(SUITE, tmp_path, progress=False, only=lambda c: c.agent == "rnd")
    res = compute_results(load_suite(SUITE), summary.results)
    assert {r.agent for r in res.rows} == {"rnd"}
    assert len(res.missing_cells) == 4 and all(m.startswith("rnd2/") for m in res.missing_cells)


def test_changed_inputs_rerun_only_that_agent(tmp_path: Path) -> None:
    """Editing the planner profile or the skill library (files the suite only names) invalidates
    that planner's finished cells; other agents' cells are reused."""
    from polar.domains.minigrid.primitives import install_primitives, primitive_skills
    from polar.skills.store import SkillLibrary

    root = Path(__file__).resolve().parents[2]
    profile = tmp_path / "sym.yaml"
    profile.write_text((root / "planners" / "symbolic.yaml").read_text())
    lib = SkillLibrary(tmp_path / "lib")
    install_primitives(lib)
    suite = {"name": "inputs", "seeds": [0], "episodes": 1,
             "agents": [{"name": "sym", "kind": "planner", "planner": str(profile), "skills": str(tmp_path / "lib")},
                        {"name": "rnd", "kind": "random"}],
             "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 10}]}
    out = tmp_path / "out"
    assert len(run_cells(suite, out, progress=False).ran) == 2
    assert not run_cells(suite, out, progress=False).ran

    profile.write_text(profile.read_text() + "\n# edited\n")
    assert [c.agent for c in run_cells(suite, out, progress=False).ran] == ["sym"]

    extra = primitive_skills()[0].model_copy(update={"name": "extra-prim", "description": "another primitive"})
    lib.register(extra)
    assert [c.agent for c in run_cells(suite, out, progress=False).ran] == ["sym"]
    assert not run_cells(suite, out, progress=False).ran


def test_an_agent_with_its_own_episode_count_plays_the_first_episodes_of_each_seed(tmp_path: Path) -> None:
    few = {**SUITE, "agents": [SUITE["agents"][0], {"name": "rnd2", "kind": "random", "episodes": 1}]}
    suite = load_suite(few)
    results = run_suite(suite, tmp_path, progress=False)
    by_agent = {r.agent: r.episodes for r in results.rows if r.harness == "DoorKey-5x5"}
    assert by_agent == {"rnd": 3 * 2, "rnd2": 1 * 2}
    assert results.episodes_by_agent == {"rnd2": 1}
    # the agent without its own count keeps the key it had before the field existed: reused
    again = run_cells(SUITE, tmp_path, progress=False)
    assert {c.agent for c in again.skipped} == {"rnd"}
    assert {c.agent for c in again.ran} == {"rnd2"}  # 3 episodes now: a different cell


def test_compare_runs_only_the_named_agents(tmp_path: Path) -> None:
    from polar.errors import ConfigError
    from polar.evals.comparison import compare

    results, _ = compare(SUITE, tmp_path, progress=False, quiet=True, agents=["rnd2"])
    assert {s.split("/")[0] for s in results.ran} == {"rnd2"}
    assert {s.split("/")[0] for s in results.missing_cells} == {"rnd"}
    with pytest.raises(ConfigError, match="--agents: nope is not an agent of suite resume"):
        compare(SUITE, tmp_path, progress=False, quiet=True, agents=["nope"])


def test_cells_on_one_local_engine_run_one_at_a_time(tmp_path: Path) -> None:
    """A local engine answers one request at a time: two planner agents whose profiles name the
    same `server:` never run side by side on Ray workers (each waits its turn while the other
    worker runs the random agent's cell). Their replies come from a real HTTP server that answers
    slowly, as a 135M model on a CPU does; the two profiles differ only in temperature, which
    tells their requests apart."""
    import yaml

    from polar.evals.runner import agent_servers
    from tests.llm.engine import require_model
    from tests.llm_server import Reply, ScriptedLLMServer

    ray = pytest.importorskip("ray")
    require_model("smollm2-135m")  # the profile's server names a known model
    finish = Reply.decision({"kind": "finish", "success": False}, delay_s=0.4)
    with ScriptedLLMServer(default=finish, model="smollm2-135m") as server:
        agents = []
        for name, temperature in (("a", 0.0), ("b", 0.5)):
            profile = tmp_path / f"{name}.yaml"
            profile.write_text(yaml.safe_dump({
                "backend": "llm", "model": "openai/smollm2-135m", "mode": "skill", "timeout_s": 10,
                "server": {"model": "smollm2-135m", "port": server.port, "autostart": False, "attach": True},
                "temperature": temperature, "retries": {"max_attempts": 1}, "repair_rounds": 0,
                "structured_output": "none", "cache_dir": None, "record_path": None,
            }))
            agents.append({"name": name, "kind": "planner", "planner": str(profile), "budget": {"decisions": 1}})
        suite = {**SUITE, "agents": [*agents, {"name": "random", "kind": "random"}],
                 "harnesses": SUITE["harnesses"][:1], "seeds": [0], "episodes": 3}
        assert set(agent_servers(load_suite(suite))) == {("a", 0), ("b", 0)}
        try:
            run_cells(suite, tmp_path / "out", workers=2, progress=False)
        finally:
            ray.shutdown()
        order = [r.body["temperature"] for r in sorted(server.requests, key=lambda r: r.received_at)]
    assert sorted(order) == [0.0] * 3 + [0.5] * 3
    assert order in ([0.0] * 3 + [0.5] * 3, [0.5] * 3 + [0.0] * 3), f"the engine's cells overlapped: {order}"


def test_cells_sharing_a_training_run_are_submitted_apart() -> None:
    """A multitask run is shared by one seed's harnesses, a `train_seed` run by one harness's
    seeds: the Ray order alternates between runs, so two workers never queue on one lock
    while another run waits; cells sharing nothing keep the suite's order."""
    ppo = {"kind": "pure_rl", "train_steps": 512}
    suite = load_suite({**SUITE, "seeds": 2, "agents": [
        {**ppo, "name": "multi", "multitask": True}, {**ppo, "name": "fixed", "train_seed": 7},
        {"name": "rnd", "kind": "random"}]})
    order = [(c.agent, c.harness, c.seed) for c in submit_order(suite, suite.cells())]
    assert order == [
        ("multi", "Empty-5x5", 0), ("multi", "Empty-5x5", 1),  # seed 0's run, then seed 1's
        ("fixed", "Empty-5x5", 0), ("fixed", "DoorKey-5x5", 0),  # Empty's run, then DoorKey's
        ("rnd", "Empty-5x5", 0), ("rnd", "Empty-5x5", 1), ("rnd", "DoorKey-5x5", 0), ("rnd", "DoorKey-5x5", 1),
        ("multi", "DoorKey-5x5", 0), ("multi", "DoorKey-5x5", 1),
        ("fixed", "Empty-5x5", 1), ("fixed", "DoorKey-5x5", 1)]


def test_a_planner_trained_per_seed_plays_each_seed_with_its_own_model(tmp_path: Path) -> None:
    """`seed_models`: seed 1's cells are served by seed 1's model on its own server, seed 0's by
    the profile's; seed 0 keeps the cell key it had without the field (its finished cells are
    reused), seed 1's changes with its model."""
    import yaml

    from polar.errors import ConfigError
    from polar.evals.cells import agent_information, cell_key
    from polar.evals.runner import agent_servers
    from polar.evals.suite import Cell
    from tests.llm.engine import require_model
    from tests.llm_server import Reply, ScriptedLLMServer

    require_model("smollm2-135m")
    weights = tmp_path / "planner-seed1.gguf"
    weights.write_bytes(b"GGUF")  # named by path: what it holds is not read here
    finish = Reply.decision({"kind": "finish", "success": False})
    with ScriptedLLMServer(default=finish, model="smollm2-135m") as s0, \
            ScriptedLLMServer(default=finish, model="planner-seed1") as s1:
        profile = tmp_path / "p.yaml"
        profile.write_text(yaml.safe_dump({
            "backend": "llm", "model": "openai/smollm2-135m", "mode": "skill", "timeout_s": 10,
            "server": {"model": "smollm2-135m", "port": s0.port, "autostart": False, "attach": True},
            "retries": {"max_attempts": 1}, "repair_rounds": 0, "structured_output": "none",
            "cache_dir": None, "record_path": None,
        }))
        plain = {"name": "p", "kind": "planner", "planner": str(profile), "budget": {"decisions": 1}}
        per_seed = {**plain, "seed_models": {1: {"model": str(weights), "port": s1.port}}}
        base = {**SUITE, "harnesses": SUITE["harnesses"][:1], "seeds": [0, 1], "episodes": 1}
        suite = load_suite({**base, "agents": [per_seed]})
        label = suite.harnesses[0].label
        assert {k: v.port for k, v in agent_servers(suite).items()} == {("p", 0): s0.port, ("p", 1): s1.port}
        assert agent_information(suite.agent("p")).role.endswith("a trained model per seed")  # the report says so
        before = load_suite({**base, "agents": [plain]})
        keys = [(cell_key(before, Cell(agent="p", harness=label, seed=s)),
                 cell_key(suite, Cell(agent="p", harness=label, seed=s))) for s in (0, 1)]
        assert keys[0][0] == keys[0][1] and keys[1][0] != keys[1][1]
        run_cells(suite, tmp_path / "out", progress=False)
        assert [r.body["model"] for r in s0.requests] == ["smollm2-135m"]
        assert [r.body["model"] for r in s1.requests] == ["planner-seed1"]
    with pytest.raises(ConfigError, match="seed_models: seeds \\[7\\] are not among"):
        load_suite({**base, "agents": [{**per_seed, "seed_models": {7: {"model": "x", "port": 1}}}]})
    missing = {**per_seed, "seed_models": {1: {"model": "no-such-model", "port": 1}}}
    with pytest.raises(ConfigError, match=r"agents\.0\.seed_models\.1: unknown model 'no-such-model'"):
        run_cells({**base, "agents": [missing]}, tmp_path / "out2", progress=False)


def test_a_sweep_run_elsewhere_is_charged_as_tuning_to_the_harnesses_it_tuned(tmp_path: Path) -> None:
    """`tuned_by` charges an outside sweep's trials to the rows of the harnesses it tuned and
    once to the agent's total, without re-keying (re-running) the agent's cells."""
    import json

    from polar.errors import ConfigError
    from polar.evals.preflight import check_suite

    sweep = tmp_path / "best.json"
    sweep.write_text(json.dumps({"best": {}, "trials": [{"trial": 0, "env_steps": 300}, {"trial": 1, "env_steps": 500}]}))
    ppo = {"name": "ppo", "kind": "pure_rl", "train_steps": 2048, "recipe": "ppo_doorkey5x5", "eval_every": 0}
    suite = {"name": "tuned", "seeds": [0], "episodes": 1, "agents": [ppo],
             "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 10},
                           {"id": "minigrid:MiniGrid-DoorKey-5x5-v0", "max_steps": 10}]}
    assert len(run_cells(suite, tmp_path / "out", progress=False).ran) == 2
    tuned = {**suite, "agents": [{**ppo, "tuned_by": {str(sweep): ["DoorKey-5x5"]}}]}
    summary = run_cells(tuned, tmp_path / "out", progress=False)
    assert not summary.ran  # the charge is accounting: the finished cells stand
    res = compute_results(load_suite(tuned), summary.results)
    tuning = {r.harness: r.ledger.tuning_env_steps for r in res.rows}
    assert tuning == {"Empty-5x5": 0, "DoorKey-5x5": 800}
    row = next(r for r in res.rows if r.harness == "DoorKey-5x5")
    assert row.train_env_steps == row.ledger.task_train_env_steps + 800
    assert res.totals[0].ledger.tuning_env_steps == 800

    with pytest.raises(ConfigError, match=r"tuned_by.*'KeyCorridor'"):
        check_suite(load_suite({**suite, "agents": [{**ppo, "tuned_by": {str(sweep): ["KeyCorridor"]}}]}))
    with pytest.raises(ConfigError, match="not a sweep's score file"):
        check_suite(load_suite({**suite, "agents": [{**ppo, "tuned_by": {str(tmp_path / "no.json"): ["Empty-5x5"]}}]}))
