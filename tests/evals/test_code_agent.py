"""The code-mode agent kind of a suite (`kind: code`, polar/evals/code_agent.py).

End to end: `polar compare` on a suite with a code agent whose model (the shipped code-planner)
is served by llama.cpp; its programs pass the real restricted gate and play in the process
sandbox on the suite's harness specs (harnesses/code_*.yaml). Fault paths (every program
refused, a program that raises) use a scripted OpenAI-compatible server: the model is not the
point there, the record of the failure is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from polar.episode import FailureCause
from polar.errors import ConfigError
from polar.evals.code_agent import CodeAgent
from polar.evals.code_tasks import TASKS
from polar.evals.runner import run_cells
from polar.evals.suite import CodeAgentConfig, SuiteHarness, load_suite
from polar.harnesses.registry import make_harness
from polar.harnesses.rollout import judge
from polar.llm.client import LLMClient
from polar.llm.settings import LLMSettings
from tests.llm.engine import free_port, require_engine, require_model
from tests.llm_server import Reply, ScriptedLLMServer


def _agent(server: ScriptedLLMServer, task: str, k: int = 3) -> CodeAgent:
    """A code agent asking the scripted server (prepare() would start llama.cpp)."""
    agent = CodeAgent(CodeAgentConfig(name="scripted", model="smollm2-135m", port=1, k=k, sandbox="default"))
    agent.task = TASKS[task]
    agent.client = LLMClient(LLMSettings(model="openai/scripted", api_base=server.url, timeout_s=10.0))
    return agent


def test_a_program_refused_k_times_earns_the_lowest_return_and_every_refusal_is_recorded() -> None:
    with ScriptedLLMServer() as server, make_harness("code_acrobot") as harness:
        server.push(Reply.text("Sure! Here is a controller: act(obs) pushes left."),
                    Reply.text("```python\nimport os\ndef act(obs):\n    return 0\n```"),
                    Reply.text("def act(obs:\n    return 0"))
        rec = _agent(server, "acrobot").episode(harness, "swing up", 1000, None, "e1")
        assert server.request_count == 3  # k programs, then it stops asking
    assert rec.success is False and rec.episode_return == TASKS["acrobot"].lowest_return and rec.env_steps == 0
    assert rec.failure_cause == FailureCause.SANDBOX_ERROR and "all refused" in (rec.failure_detail or "")
    assert len(rec.decisions) == 3 and rec.llm_calls == 3 and rec.extra["refused"] == 3
    for d in rec.decisions:  # each program, its verdict and the reply that held it
        (out,) = d.outcomes
        assert d.decision["kind"] == "code" and out.error_type == "GateRefused" and not out.success
        assert "refused by the restricted gate" in out.reason and d.llm_calls[0].model_extra["reply"]
    assert "import of os is not allowed" in rec.decisions[1].outcomes[0].reason


def test_a_program_that_raises_earns_the_lowest_return_and_the_record_says_why() -> None:
    with ScriptedLLMServer() as server, make_harness("code_pendulum") as harness:
        server.push(Reply.text("def act(obs):\n    cos_a, sin_a, w = obs\n    return [obs[7]]\n"))
        rec = _agent(server, "pendulum").episode(harness, "swing up", 1000, None, "e2")
    assert rec.episode_return == TASKS["pendulum"].lowest_return and not rec.success
    (d,) = rec.decisions
    assert d.outcomes[0].error_type == "SandboxCodeError" and "IndexError" in d.outcomes[0].reason
    assert rec.failure_cause == FailureCause.SANDBOX_ERROR and rec.failure_detail.startswith("SandboxCodeError")


def test_a_good_program_plays_the_cells_harness_and_the_spec_judges_as_the_task_does() -> None:
    good = "def act(obs):\n    position, velocity = obs\n    return 2 if velocity > 0 else 0\n"
    with ScriptedLLMServer() as server, make_harness("code_mountaincar") as harness:
        server.push(Reply.text(good), Reply.text("def act(obs):\n    return 1\n"))
        agent = _agent(server, "mountaincar")
        won = agent.episode(harness, "flag", 1000, None, "e3")
        lost = agent.episode(harness, "flag", 1000, None, "e4")
    assert won.success and won.terminated and 0 < won.env_steps < 200
    assert won.episode_return == -won.env_steps and won.failure_cause is None
    assert not lost.success and lost.truncated and lost.env_steps == 200
    assert lost.failure_cause == FailureCause.STEP_LIMIT
    # the suite's harness spec judges these episodes as the code task does (so RL arms on the
    # same spec are judged alike)
    spec = make_harness("code_mountaincar").spec
    for r in (won, lost):
        assert judge(spec, info={}, terminated=r.terminated, truncated=r.truncated,
                     episode_return=r.episode_return).success == r.success


@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_code_harness_spec_is_its_tasks_env_with_its_success_rule(name: str) -> None:
    from polar.evals.code_agent import _same_env

    task = TASKS[name]
    _same_env(SuiteHarness(id=f"code_{name}", name=name), task)  # same spaces and step limit
    with make_harness(f"code_{name}") as h:
        if name == "maze":
            assert h.spec.reports_success  # the maze reports success itself, as the task reads it
            return
        for ret, term, trunc in [(task.threshold, False, True), (task.threshold - 1, False, True),
                                 (-150.0, True, False), (-200.0, False, True)]:
            want = task.success(ret, term)
            got = judge(h.spec, info={}, terminated=term, truncated=trunc, episode_return=ret).success
            assert got == want, (name, ret, term, trunc)


def test_a_label_mapped_to_the_wrong_task_is_refused_before_it_plays() -> None:
    from polar.evals.code_agent import _same_env

    with pytest.raises(ConfigError, match="harness acrobot .* observation_space is not code task 'cartpole'"):
        _same_env(SuiteHarness(id="code_acrobot", name="acrobot"), TASKS["cartpole"])


@pytest.mark.slow
def test_compare_runs_a_code_agent_cell_with_a_served_model_and_resumes(tmp_path: Path) -> None:
    require_engine()
    require_model("smollm2-135m")
    suite = {"name": "code-test", "seeds": [0], "episodes": 2, "eval_seed": 1000, "trace": 0, "workers": 0,
             "agents": [{"name": "code-planner", "kind": "code", "model": "code-planner", "port": free_port(),
                         "k": 2, "temperature": 0.0, "sandbox": "default"}],
             "harnesses": [{"id": "code_cartpole", "name": "cartpole"}]}
    (tmp_path / "code-test.yaml").write_text(yaml.safe_dump(suite))
    s = load_suite(tmp_path / "code-test.yaml")
    out = tmp_path / "out"
    summary = run_cells(s, out, progress=False)
    (res,) = summary.results
    assert res.agent_kind == "code" and list(res.prep.info["charges"].values()) == [72_048]
    assert len(res.episodes) == 2 and [e.seed for e in res.episodes] == [1000, 1001]
    for e in res.episodes:
        src = e.decisions[-1].decision["source"]
        assert src.startswith("def act(obs):\n    x, x_dot, angle, angle_dot = obs"), src
        assert e.env_steps == sum(d.env_steps for d in e.decisions) > 0 and e.llm_calls == len(e.decisions)
        assert e.agent == "code:code-planner" and e.success == (e.episode_return >= 475)
    calls = (out / "work" / "code-planner" / "cartpole" / "seed-0" / "calls.jsonl").read_text().splitlines()
    assert len(calls) == sum(e.llm_calls for e in res.episodes)
    assert json.loads(calls[0])["token_ids_source"] == "sampled"
    from polar.evals.pages import cell_page

    page = cell_page(res, "view", "code", 3)  # the report's episode page shows each program as written
    assert "policy code:<pre>def act(obs):\n    x, x_dot, angle, angle_dot = obs\n" in page
    again = run_cells(s, out, progress=False)
    assert not again.ran and len(again.skipped) == 1  # resumed: nothing played again


def test_a_code_agents_sandbox_must_be_a_known_profile_and_not_none() -> None:
    import pydantic

    with pytest.raises(pydantic.ValidationError, match="must run somewhere"):
        CodeAgentConfig(name="c", model="smollm2-135m", port=1, sandbox=None)
    with pytest.raises(pydantic.ValidationError, match="no-such-sandbox"):
        CodeAgentConfig(name="c", model="smollm2-135m", port=1, sandbox="no-such-sandbox")
    assert CodeAgentConfig(name="c", model="smollm2-135m", port=1).sandbox.backend == "docker"
