"""The planner-training loop on Crafter (issue 42; docs/crafter.md section 6d): a real teacher
episode of the symbolic-memory planner gives dataset examples the student can be trained on and
can reply: every target passes llama.cpp's own grammar for the schema the served student is
constrained by, and validates against the skills on offer; the student is asked at the teacher's
moments (the same interrupt atoms)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("crafter")

from polar.agent import Agent, AgentSettings  # noqa: E402
from polar.domains.crafter.harness import MISSION  # noqa: E402
from polar.errors import ConfigError  # noqa: E402
from polar.harnesses.base import HarnessSpec  # noqa: E402
from polar.harnesses.registry import make_harness  # noqa: E402
from polar.llm.dataset import read_split  # noqa: E402
from polar.planners.base import PlannerContext  # noqa: E402
from polar.planners.dataset import build_dataset, iter_episodes  # noqa: E402
from polar.planners.llm import LLMPlanner  # noqa: E402
from polar.planners.profile import load_planner, load_planner_profile  # noqa: E402
from polar.skills.store import SkillLibrary  # noqa: E402
from tests.planners.test_grammar_order import ServedGrammar  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
STUDENT = "student-crafter"


def _student() -> LLMPlanner:
    """The student, unserved (as the dataset's renderer loads it)."""
    return LLMPlanner(load_planner_profile(STUDENT, {"cache_dir": None, "record_path": None, "server": None}))


def test_the_student_is_interrupted_where_the_teacher_was():
    teacher = load_planner_profile("crafter-memory")
    student = _student()
    assert list(student.interrupt) == teacher.options["interrupt"]
    assert student.memory  # it reads the agent's memory, as the teacher did
    with pytest.raises(ConfigError, match="interrupt: each entry must be a predicate string"):
        load_planner_profile(STUDENT, {"interrupt": [""], "server": None})


def test_a_crafter_teacher_episode_gives_targets_the_served_student_can_reply(tmp_path):
    from tests.llm.engine import require_engine, require_model

    require_engine()
    require_model("smollm2-135m")
    grammar = ServedGrammar()
    planner = load_planner("crafter-memory")
    library = SkillLibrary(REPO / "skills_crafter_memory")
    with make_harness("crafter:", odometry=True) as h:  # a training world (env seeds < 100000)
        rec = Agent(planner, library, AgentSettings(max_decisions=25, skills_shown=40, record_context=True)
                    ).run(MISSION, h, seed=7)
    rec.save(tmp_path / "teacher" / "0.json")
    assert len(rec.decisions) == 25 and not rec.success  # Crafter's episodes never succeed as a whole
    # so the default filter (decisions of harness-confirmed episodes) keeps nothing: --keep outcome
    assert build_dataset([tmp_path / "teacher"], tmp_path / "both", student=STUDENT, val_fraction=0.0).counts["train"] == 0
    info = build_dataset([tmp_path / "teacher"], tmp_path / "d", student=STUDENT, keep="outcome", val_fraction=0.0)
    examples = read_split(tmp_path / "d")
    ok = sum(all(o.success for o in d.outcomes) and bool(d.outcomes) for d in rec.decisions)
    assert len(examples) + info.skipped.get("duplicate (train)", 0) == ok >= 10
    student = _student()
    contexts = {(r.episode_id, d.index): (r, d) for r in iter_episodes([tmp_path / "teacher"]) for d in r.decisions}
    skills = set()
    for ex in examples:
        r, d = contexts[(ex.episode_id, ex.decision_index)]
        ctx = PlannerContext.model_validate(
            {**d.context, "spec": HarnessSpec.model_validate(r.extra["harness_spec"])})  # type: ignore[dict-item]
        assert grammar.accepts(ex.completion, student.response_format(ctx)["schema"]), ex.completion
        decision = student.validate(ex.completion, ctx)
        assert decision.kind == d.decision["kind"] and getattr(decision, "skill", None) == d.decision.get("skill")
        # the prompt is the one the served student reads: its own view and memory, every skill on offer
        prompt = ex.messages[-1]["content"]
        assert "remembers(" in prompt and "Skills: " in prompt and all(s.name in prompt for s in ctx.skills)
        skills.add(json.loads(ex.completion)["decision"].get("skill"))
    assert len(skills) >= 4, skills  # more than one kind of call: survival, collecting, crafting
