"""A skill cannot crash an episode. A CartPole policy (observations of 4 numbers) in a library
that accepts every harness, on MountainCar (observations of 2): not offered where its spaces
show it cannot read the harness, an ordinary failed outcome (`skill-error`) when called
anyway, and where only running it can tell (a feature hook in between), the exception torch
raises is that outcome too. The episode goes on and its record is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from polar.agent import Agent, AgentSettings
from polar.agent.context import ContextBuilder
from polar.agent.recording import RecordingHarness
from polar.harnesses import make_harness
from polar.planners.decisions import Finish, SkillCall
from polar.skills.store import SkillLibrary
from tests.llm_server import Reply, ScriptedLLMServer, write_profile
from tests.skills.conftest import tiny_policy

REPO = Path(__file__).resolve().parents[2]
CARTPOLE, MOUNTAINCAR = "gym:CartPole-v1", "gym:MountainCar-v0"
BALANCE = {"description": "Balance the pole upright.", "termination": {"predicates": ["at(goal)"]},
           "step_budget": 8, "provenance": {"env_steps": 20000, "trained_on": [CARTPOLE]}}


@pytest.fixture
def library(tmp_path: Path) -> SkillLibrary:
    """`balance`: the CartPole policy accepting every harness (as a skill registered before
    harnesses were required does); `balance_raw`: the same behind a feature hook that hands the
    policy the raw observation, so its spaces cannot tell what it reads."""
    lib = SkillLibrary(tmp_path / "skills")
    (lib.root / "hooks").mkdir(parents=True)
    (lib.root / "hooks" / "raw.py").write_text("def features(obs, args, harness=None):\n    return obs\n")
    with make_harness(CARTPOLE) as h:
        policy = tiny_policy(obs_space=h.observation_space, act_space=h.action_space)
    lib.register_policy(policy, name="balance", harnesses=["*"], **BALANCE)
    lib.register_policy(policy, name="balance_raw", harnesses=["*"], features={"fn": "hooks.raw:features"}, **BALANCE)
    return lib


def offered(lib: SkillLibrary, harness_id: str) -> list[str]:
    with make_harness(harness_id) as h:
        rh = RecordingHarness(h, None)
        rh.reset(seed=0)
        return [s.name for s in ContextBuilder("balance", rh, lib, episode_id="t", skills_shown=12,
                                               history_len=0).skills]


def test_a_skill_is_offered_only_where_its_spaces_fit(library: SkillLibrary) -> None:
    assert offered(library, CARTPOLE) == ["balance", "balance_raw"]
    assert offered(library, MOUNTAINCAR) == ["balance_raw"]  # the hook hides what it reads
    assert [s.name for s in library.search("balance", harness=MOUNTAINCAR)] == ["balance", "balance_raw"]  # by id


class _CallsThenFinishes:
    """Calls each skill named (as a planner that was shown them would), then gives up."""

    name = "calls"

    def __init__(self, *skills: str) -> None:
        self.skills, self.seen = list(skills), []

    def reset(self) -> None:
        self.todo = list(self.skills)

    def decide(self, context):
        self.seen.append(context)
        if self.todo:
            return SkillCall(skill=self.todo.pop(0), args={})
        return Finish(success=False, reason="seen enough")


def test_calling_it_anyway_is_a_skill_error_and_the_episode_goes_on(library: SkillLibrary) -> None:
    planner = _CallsThenFinishes("balance", "balance_raw")
    with make_harness(MOUNTAINCAR) as h:
        rec = Agent(planner, library, AgentSettings()).run("balance", h, seed=0)
    refused, raised = (d.outcomes[0] for d in rec.decisions[:2])
    # refused before any step: its spaces show it cannot read MountainCar's observation
    assert refused.cause == "skill-error" and refused.steps == 0 and refused.error_type == "SkillSpaceMismatch"
    assert "gives shape [2] where shape [4] is expected" in refused.reason
    # the hook passes the observation through: torch raises, and that is the outcome
    assert raised.cause == "skill-error" and raised.steps == 0 and raised.error_type == "RuntimeError"
    assert raised.reason.startswith("skill-error: RuntimeError: ") and len(raised.reason) < 400
    # the episode went on: the planner saw both failures and decided a third time
    assert len(rec.decisions) == 3 and "skill-error" in planner.seen[2].history[-1].reason
    # (MountainCar's spec judges by return, -110 or more, which an episode of no steps meets:
    # where the judge calls it a failure, the failure is the skill's error)
    assert rec.failure_cause == (None if rec.success else "skill-error")
    on_disk = json.loads(rec.model_dump_json())
    assert on_disk["decisions"][1]["outcomes"][0]["cause"] == "skill-error"


def test_polar_task_writes_the_record_when_a_skill_raises(library: SkillLibrary, tmp_path: Path) -> None:
    """The reported crash, end to end: a planner (a real LLM client against the scripted
    server) calls the CartPole skill on another game; `polar task` ends normally (no
    traceback) and episode.json holds the skill-error outcome."""
    with ScriptedLLMServer() as server:
        server.push(Reply.decision({"kind": "skill", "skill": "balance_raw", "reason": "balance it"}),
                    Reply.decision({"kind": "finish", "success": False, "reason": "it failed"}))
        profile = write_profile(tmp_path, server)
        env = {**os.environ, "POLAR_SKILLS": str(library.root)}
        r = subprocess.run(
            [sys.executable, "-m", "polar", "task", "balance", "--harness", MOUNTAINCAR, "--planner",
             str(profile), "--seed", "0", "--out", str(tmp_path / "run")],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "skill-error: RuntimeError" in r.stdout  # the live trace shows the outcome
    rec = json.loads((tmp_path / "run" / "episode.json").read_text())
    first = rec["decisions"][0]["outcomes"][0]
    assert first["cause"] == "skill-error" and first["error_type"] == "RuntimeError", first
    assert [d["decision"]["kind"] for d in rec["decisions"]] == ["skill", "finish"]
    assert rec["env_steps"] == 0 and rec["failure_cause"] == (None if rec["success"] else "skill-error")


def test_space_rule() -> None:
    from polar.harnesses.spaces import space_mismatch, space_to_spec

    def fits(given: gym.Space, accepted: gym.Space) -> bool:
        return space_mismatch(space_to_spec(given), space_to_spec(accepted)) is None

    box = gym.spaces.Box(-1, 1, (4,))
    assert fits(gym.spaces.Discrete(3), gym.spaces.Discrete(7))  # goto's 3 actions in MiniGrid's 7
    assert not fits(gym.spaces.Discrete(3), gym.spaces.Discrete(2))
    assert fits(gym.spaces.Box(-5, 5, (4,)), box) and not fits(gym.spaces.Box(-1, 1, (2,)), box)
    assert not fits(box, gym.spaces.Discrete(4))
    mission = gym.spaces.Dict({"image": box, "mission": gym.spaces.Text(16)})
    assert fits(mission, gym.spaces.Dict({"image": box}))  # extra keys are ignored by a policy
    why = space_mismatch(space_to_spec(gym.spaces.Dict({"img": box})), space_to_spec(gym.spaces.Dict({"image": box})))
    assert why is not None and "no key 'image'" in why
