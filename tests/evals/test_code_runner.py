"""Code-mode tasks and the program runner: real envs, the real restricted gate, real sandboxes."""

from __future__ import annotations

import pytest

from polar.errors import ConfigError
from polar.evals.code_runner import docker_profile, extract_program, gate, run_program
from polar.evals.code_tasks import TASKS, get_task, make_task_harness, task_messages
from polar.sandboxes.base import SandboxCodeError
from polar.sandboxes.profiles import SandboxProfile

# Hand-written controllers that solve each task: the tasks are solvable through the obs and
# action contracts the prompt documents (a wrong obs mapping or action contract breaks them).
GOOD = {
    "cartpole": "def act(obs):\n    x, v, a, w = obs\n    return 1 if a + 0.5 * w > 0 else 0\n",
    "acrobot": "def act(obs):\n    return 2 if obs[5] > 0 else 0\n",
    "mountaincar": "def act(obs):\n    return 2 if obs[1] > 0 else 0\n",
    "pendulum": ("import math\ndef act(obs):\n    c, s, w = obs\n    th = math.atan2(s, c)\n    if c > 0.9:\n"
                 "        return [-10 * th - 2 * w]\n    e = 0.5 * w * w + 15 * c\n    return [(15 - e) * w]\n"),
    "maze": "def act(obs):\n    dx, dy, vx, vy = obs\n    return [3 * dx - 0.5 * vx, 3 * dy - 0.5 * vy]\n",
}
BAD = {  # push one way only: never solves
    "cartpole": "def act(obs):\n    return 1\n",
    "acrobot": "def act(obs):\n    return 1\n",
    "mountaincar": "def act(obs):\n    return 2\n",
    "pendulum": "def act(obs):\n    return [0.0]\n",
    "maze": "def act(obs):\n    return [-obs[0], -obs[1]]\n",
}
PROCESS = SandboxProfile()


@pytest.mark.parametrize("name", sorted(TASKS))
def test_a_good_controller_solves_the_task_and_a_bad_one_does_not(name: str) -> None:
    task = TASKS[name]
    good = run_program(task, GOOD[name], [1, 2], PROCESS)
    assert good.gate == "ok" and all(e.error is None for e in good.episodes), good.episodes
    assert all(e.success for e in good.episodes), good.episodes
    bad = run_program(task, BAD[name], [0], PROCESS)
    assert bad.episodes[0].error is None and not bad.episodes[0].success
    assert good.env_steps == sum(e.steps for e in good.episodes) > 0


def test_episodes_are_counted_step_by_step_and_seeded() -> None:
    task = TASKS["cartpole"]
    r1 = run_program(task, BAD["cartpole"], [3, 4], PROCESS)
    r2 = run_program(task, BAD["cartpole"], [3, 4], PROCESS)
    assert [e.steps for e in r1.episodes] == [e.steps for e in r2.episodes]  # same seeds, same episodes
    assert [e.ret for e in r1.episodes] == [float(e.steps) for e in r1.episodes]  # CartPole: +1 per step
    assert r1.env_steps == sum(e.steps for e in r1.episodes)


def test_the_program_sees_the_documented_flat_observation() -> None:
    with make_task_harness("maze") as h:
        obs, _ = h.reset(seed=0)
    assert isinstance(obs, list) and len(obs) == 4 and all(type(v) is float for v in obs)
    assert 0.3 < (obs[0] ** 2 + obs[1] ** 2) ** 0.5 < 2.5  # a waypoint about one cell away


def test_a_refused_program_earns_the_lowest_return_and_says_why() -> None:
    task = TASKS["acrobot"]
    r = run_program(task, "import os\ndef act(obs):\n    return 0\n", [0, 1], PROCESS)
    assert "import of os is not allowed" in r.gate
    assert [(e.ret, e.steps, e.error) for e in r.episodes] == [(-500.0, 0, "GateRefused")] * 2
    assert gate("def act(obs:\n") is not None  # does not parse
    assert "no function named 'act'" in gate("def policy(obs):\n    return 0\n")
    assert gate(GOOD["acrobot"]) is None


def test_a_program_that_raises_or_hangs_earns_the_lowest_return() -> None:
    task = TASKS["pendulum"]
    raised = run_program(task, "def act(obs):\n    return [1.0 / (obs[0] - obs[0])]\n", [0], PROCESS).episodes[0]
    assert raised.error == "SandboxCodeError" and "ZeroDivisionError" in raised.reason
    assert raised.ret == task.lowest_return < -3000
    hung = run_program(task, "def act(obs):\n    while True:\n        pass\n", [0], PROCESS).episodes[0]
    assert hung.error == "SandboxTimeout" and hung.ret == task.lowest_return
    late = run_program(TASKS["cartpole"], "n = []\ndef act(obs):\n    n.append(1)\n    return obs[9] if len(n) > 5 else 0\n",
                       [0], PROCESS).episodes[0]
    assert late.error == "SandboxCodeError" and late.steps == 5 and late.ret == 0.0  # its 5 steps still count


def test_replies_are_read_with_or_without_a_code_fence() -> None:
    code = "def act(obs):\n    return 0\n"
    assert extract_program(code) == code
    assert extract_program(f"Here:\n```python\n{code}```\nDone.") == code
    assert extract_program(f"```\n{code}") == code  # a reply cut before its closing fence


def test_the_prompt_names_the_task_and_its_contract() -> None:
    msgs = task_messages(get_task("mountaincar"))
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "act(obs)" in msgs[0]["content"] and "obs = [position, velocity]: " in msgs[1]["content"]
    for task in TASKS.values():  # the names a program copies, and the action contract right before the answer
        user = task_messages(task)[1]["content"]
        assert all(n.isidentifier() for n in task.names) and f"obs = [{', '.join(task.names)}]:" in user
        assert user.splitlines()[-1] == f"act(obs) returns {task.action}"
    assert get_task("acrobot").names == ["cos1", "sin1", "cos2", "sin2", "w1", "w2"]
    with pytest.raises(ConfigError, match="unknown code-mode task 'nope'"):
        get_task("nope")


def test_programs_run_in_the_docker_sandbox_with_the_network_off(docker_engine) -> None:
    r = run_program(TASKS["cartpole"], GOOD["cartpole"], [0], docker_profile())
    assert r.backend == "docker" and r.episodes[0].success and r.episodes[0].steps == 500
    probe = ("def act(obs):\n    import socket\n    s = socket.socket()\n    s.settimeout(0.3)\n"
             "    s.connect(('1.1.1.1', 80))\n    return 0\n")
    # the gate refuses the import (even one inside act) before the sandbox sees it
    assert "import of socket is not allowed" in run_program(TASKS["cartpole"], probe, [0], docker_profile()).gate
    # and docker runs it with no network: the sandbox alone, without the gate
    with docker_profile().make() as box:
        box.load(probe)
        with pytest.raises(SandboxCodeError, match="OSError"):
            box.call("act", [0.0, 0.0, 0.0, 0.0])
