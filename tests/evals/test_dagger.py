"""DAgger in the planner-training loop (`improve` with `targets: teacher`): every state the student
visited is labelled with the teacher's decision for that state, never the student's own, with the
prompt exactly as the student saw it; the rounds aggregate their labels with the teacher's examples.

The student is a real LLM planner in memory mode (student-memory's templates) served by the
scripted server on 127.0.0.1; its replies are the symbolic-memory teacher's decisions, except at
seeded random states where it turns `left` instead (the student's mistakes). The teacher's live
decision at every state it reached is kept while it plays: the relabelling, which replays the
recorded contexts through the teacher afterwards, must give exactly those."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from polar.agent.loop import Agent, AgentSettings
from polar.evals.dagger import aggregate, balanced
from polar.evals.improve import ImproveConfig, _key, student_suite
from polar.evals.suite import Suite, SuiteHarness
from polar.harnesses.registry import make_harness
from polar.llm.dataset import Example, read_info, read_split
from polar.planners.dataset import build_dataset, index_calls, iter_episodes, relabel_examples
from polar.planners.decisions import Decision, Finish
from polar.planners.profile import load_planner
from polar.skills.search_path import open_library
from polar.workspace import shipped_roots
from tests.llm_server import Reply, ScriptedLLMServer, write_profile

DOORKEY = "minigrid:MiniGrid-DoorKey-8x8-v0"
TASK = "use the key to open the door and then get to the goal"
WRONG = {"kind": "skill", "skill": "left", "args": {}}


class NoisyStudent:
    """The LLM planner, whose server is told before each request what to reply: the teacher's
    decision for the live state, or (with probability `p`) a `left` turn the teacher would not make."""

    def __init__(self, llm: Any, server: ScriptedLLMServer, teacher: Any, p: float, seed: int) -> None:
        self.llm, self.server, self.teacher, self.p = llm, server, teacher, p
        self.name, self.memory = llm.name, llm.memory
        self.rng = random.Random(seed)
        self.oracle: list[Decision] = []  # the teacher's live decision at each state, in order
        self.replies: list[dict[str, Any]] = []

    @property
    def last_calls(self) -> Any:
        return self.llm.last_calls

    def reset(self) -> None:
        self.llm.reset()

    def decide(self, ctx: Any) -> Decision:
        truth = self.teacher.decide(ctx)
        self.oracle.append(truth)
        reply = truth.model_dump(mode="json", exclude={"reason"}, exclude_none=True)
        if not isinstance(truth, Finish) and self.rng.random() < self.p:
            reply = WRONG
        self.replies.append(reply)
        self.server.push(Reply.decision(reply))
        return self.llm.decide(ctx)


def _library() -> Any:
    return open_library(next(r / "skills_memory" for r in shipped_roots() if (r / "skills_memory").is_dir()))


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, NoisyStudent, ScriptedLLMServer]:
    tmp = tmp_path_factory.mktemp("dagger")
    with ScriptedLLMServer() as server:
        profile = write_profile(tmp, server, templates={"system": "student_system", "user": "student_skill"},
                                observation="memory", max_tokens=64, budgets={"max_calls": 200})
        student = NoisyStudent(load_planner(profile), server, load_planner("symbolic-memory"), p=0.3, seed=0)
        agent = Agent(student, _library(), AgentSettings(max_decisions=30, record_context=True, record_steps=False))
        for seed in (1, 2):
            with make_harness(DOORKEY, odometry=True) as h:
                agent.run(TASK, h, seed=seed).save(tmp / "episodes" / f"seed-{seed}.json")
        assert server.request_count == len(student.oracle) > 10
    return tmp, student, server


def _decision(ex: Example) -> dict[str, Any]:
    return json.loads(ex.completion)["decision"]


def _plain(d: Decision) -> dict[str, Any]:
    return d.model_dump(mode="json", exclude={"reason"}, exclude_none=True)


def test_every_visited_state_is_labelled_with_the_teachers_decision_on_the_prompt_the_student_saw(played):
    tmp, student, server = played
    examples, skipped = relabel_examples(iter_episodes([tmp / "episodes"]), load_planner("symbolic-memory"),
                                         index_calls([tmp / "calls.jsonl"]))
    assert not skipped  # the teacher planned from every state the student reached
    assert [ex.messages for ex in examples] == [r.messages for r in server.requests]
    assert [_decision(ex) for ex in examples] == [_plain(d) for d in student.oracle]
    assert all(ex.source == "teacher:symbolic@self:openai/scripted" for ex in examples)


def test_the_targets_are_not_the_students_replies(played):
    """Where the student turned left and the teacher would not have, the label is the teacher's
    call: a dataset built from the student's own replies fails here."""
    tmp, student, _ = played
    info = build_dataset([tmp / "episodes"], tmp / "round-1" / "data", calls=[tmp / "calls.jsonl"],
                         val_fraction=0.0, teacher="symbolic-memory")
    assert info.keep == "teacher:symbolic-memory"
    by_prompt = {json.dumps(ex.messages): _decision(ex) for ex in read_split(tmp / "round-1" / "data")}
    mistakes = [(req, reply, _plain(truth)) for req, reply, truth in zip(
        played[2].requests, student.replies, student.oracle, strict=True) if reply != _plain(truth)]
    assert len(mistakes) >= 3
    for req, reply, truth in mistakes:
        assert by_prompt[json.dumps(req.messages)] == truth != reply


def test_the_rounds_aggregate_every_label_with_a_balanced_share_of_the_teachers_examples(played, tmp_path):
    tmp, _, _ = played
    labels = read_split(tmp / "round-1" / "data")
    teacher = [Example(messages=[{"role": "user", "content": f"{task} {i}"}], completion="{}", source="teacher:t",
                       harness_id=task, seed=i, episode_id=str(i), decision_index=0, skill="goto")
               for task, n in (("a", 50), ("b", 3)) for i in range(n)]
    assert [ex.harness_id for ex in balanced(teacher, 5, 0)].count("a") == 5
    assert [ex.harness_id for ex in balanced(teacher, 5, 0)].count("b") == 3
    from polar.llm.dataset import DatasetInfo, write_dataset
    write_dataset(tmp_path / "sft", {"train": teacher}, DatasetInfo())
    row = aggregate([tmp / "round-1" / "data"], [tmp_path / "sft"], 5, 0, tmp_path / "train")
    train = read_split(tmp_path / "train")
    assert row["examples"] == len(train) == len(labels) + 8 and row["student_states"] == len(labels)
    assert {ex.key() for ex in labels} <= {ex.key() for ex in train}
    assert read_info(tmp_path / "train").per_harness == {"a": 5, "b": 3, DOORKEY: len(labels)}


def test_dagger_is_off_by_default_and_keeps_the_rounds_keys(tmp_path: Path) -> None:
    tasks = [SuiteHarness(id=DOORKEY, kwargs={"odometry": True})]
    cfg = ImproveConfig(model="m", name="x", profile="student-memory", observation="memory", tasks=tasks)
    assert cfg.targets == "reward" and _key(cfg, 1, "m") == _key(cfg.model_copy(), 1, "m")
    dagger = cfg.model_copy(update={"targets": "teacher", "teacher": "symbolic-memory"})
    assert _key(dagger, 1, "m") != _key(cfg, 1, "m")
    assert "targets" not in json.dumps(student_suite(cfg, "s", {}, tasks, [1], 1, 0))
    suite = Suite.model_validate(student_suite(dagger, "s", {}, tasks, [1], 1, 0, record_context=True))
    assert suite.agents[0].record_context is True
    with pytest.raises(Exception, match="targets: teacher needs `teacher`"):
        ImproveConfig(model="m", name="x", tasks=tasks, targets="teacher")
