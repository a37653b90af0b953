"""The planner-training loop on Crafter (issue 42; docs/crafter.md section 6d): a real teacher
episode of the symbolic-memory planner gives dataset examples the student can be trained on and
can reply: every target passes llama.cpp's own grammar for the schema the served student is
constrained by, and validates against the skills on offer; the student is asked at the teacher's
moments (the same interrupt atoms)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("crafter")

from polar.agent import Agent, AgentSettings  # noqa: E402
from polar.domains.crafter.harness import MISSION  # noqa: E402
from polar.domains.crafter.state import MAX_VITAL  # noqa: E402
from polar.episode import EpisodeRecord  # noqa: E402
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
SHORT = "student-crafter-short"  # the next run's student: the short prompt and the no-op guard


def _student(name: str = STUDENT) -> LLMPlanner:
    """The student, unserved (as the dataset's renderer loads it)."""
    return LLMPlanner(load_planner_profile(name, {"cache_dir": None, "record_path": None, "server": None}))


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EpisodeRecord]:
    """25 decisions of a real teacher episode (the symbolic-memory planner on a training world),
    saved as the teacher stage saves them."""
    planner = load_planner("crafter-memory")
    library = SkillLibrary(REPO / "skills_crafter_memory")
    with make_harness("crafter:", odometry=True) as h:  # a training world (env seeds < 100000)
        rec = Agent(planner, library, AgentSettings(max_decisions=25, skills_shown=40, record_context=True)
                    ).run(MISSION, h, seed=7)
    folder = tmp_path_factory.mktemp("crafter-teacher")
    rec.save(folder / "teacher" / "0.json")
    return folder / "teacher", rec


def test_the_student_is_interrupted_where_the_teacher_was():
    teacher = load_planner_profile("crafter-memory")
    student = _student()
    assert list(student.interrupt) == teacher.options["interrupt"]
    assert student.memory  # it reads the agent's memory, as the teacher did
    with pytest.raises(ConfigError, match="interrupt: each entry must be a predicate string"):
        load_planner_profile(STUDENT, {"interrupt": [""], "server": None})


@pytest.mark.parametrize("name", [STUDENT, SHORT])
def test_a_crafter_teacher_episode_gives_targets_the_served_student_can_reply(tmp_path, teacher, name):
    from tests.llm.engine import require_engine, require_model

    require_engine()
    require_model("smollm2-135m")
    grammar = ServedGrammar()
    folder, rec = teacher
    assert len(rec.decisions) == 25 and not rec.success  # Crafter's episodes never succeed as a whole
    # so the default filter (decisions of harness-confirmed episodes) keeps nothing: --keep outcome
    assert build_dataset([folder], tmp_path / "both", student=name, val_fraction=0.0).counts["train"] == 0
    info = build_dataset([folder], tmp_path / "d", student=name, keep="outcome", val_fraction=0.0)
    examples = read_split(tmp_path / "d")
    ok = sum(all(o.success for o in d.outcomes) and bool(d.outcomes) for d in rec.decisions)
    assert len(examples) + info.skipped.get("duplicate (train)", 0) == ok >= 10
    student = _student(name)
    contexts = {(r.episode_id, d.index): (r, d) for r in iter_episodes([folder]) for d in r.decisions}
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
        assert "remembers(" in prompt and "Skills: " in prompt
        listed = next(t for t in prompt.splitlines() if t.startswith("Skills: "))[len("Skills: "):].split()
        if name == SHORT:  # every fact of the state, read back from the short prompt's ladders and groups;
            assert _facts_read_back(prompt) == set(ctx.symbolic.predicates)  # type: ignore[union-attr]
            assert decision.skill in listed  # type: ignore[union-attr]  # the skills it can call now, the target among them
        else:
            assert [s.split("(")[0] for s in listed] == [s.name for s in ctx.skills]
        skills.add(json.loads(ex.completion)["decision"].get("skill"))
    assert len(skills) >= 4, skills  # more than one kind of call: survival, collecting, crafting


def _facts_read_back(prompt: str) -> set[str]:
    """The predicates the short prompt's `Facts:` line stands for: each group `name(a b)` is
    name(a) name(b); `has(x,N)` is has(x) and has(x,1..N); `below(v,N)` is below(v,N..9)."""
    line = next(t for t in prompt.splitlines() if t.startswith("Facts: "))[len("Facts: "):]
    facts: set[str] = set()
    for name, args in re.findall(r"([a-z_]+)(?:\(([^)]*)\))?", line):
        for arg in args.split() if args else [None]:
            if arg is None:
                facts.add(name)
            elif name == "has":
                item, n = arg.rsplit(",", 1)
                facts |= {f"has({item})", *(f"has({item},{k})" for k in range(1, int(n) + 1))}
            elif name == "below":
                vital, n = arg.rsplit(",", 1)
                facts |= {f"below({vital},{k})" for k in range(int(n), MAX_VITAL + 1)}
            else:
                facts.add(f"{name}({arg})")
    return facts


def test_the_short_prompt_holds_every_fact_in_fewer_tokens(teacher):
    """On the real teacher episode's states (no engine needed): the short prompt's facts read
    back to the state's predicates exactly, so whatever the teacher's choice read is there;
    it is shorter; and the short student's profile differs from the shipped one only where
    meant (template, model, the no-op guard)."""
    from polar.llm.finetune import load_tokenizer
    from tests.llm.engine import require_model

    _, rec = teacher
    long, short = _student(), _student(SHORT)
    assert short.noop_guard and not long.noop_guard and short.interrupt == long.interrupt and short.memory
    require_model("smollm2-135m")
    tok = load_tokenizer("smollm2-135m")
    spec = HarnessSpec.model_validate(rec.extra["harness_spec"])
    sizes = []
    for d in rec.decisions:
        ctx = PlannerContext.model_validate({**d.context, "spec": spec})  # type: ignore[dict-item]
        prompts = [p.messages(ctx)[-1]["content"] for p in (long, short)]
        assert _facts_read_back(prompts[1]) == set(ctx.symbolic.predicates)  # type: ignore[union-attr]
        sizes.append([len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts])
    assert all(s < lo for lo, s in sizes)
    assert sum(s for _, s in sizes) < 0.75 * sum(lo for lo, _ in sizes), sizes  # 0.65 at seed 7


def test_the_next_runs_dagger_config_names_the_short_student_and_the_teacher():
    """docs/crafter.md 6e step 5 (run in 6h): the config validates, its profile is the short student
    and its teacher the planner that made the dataset, on the memory skills' harness."""
    from polar.config import load_yaml
    from polar.evals.improve import ImproveConfig

    cfg = load_yaml(REPO / "evals" / "planner-training" / "crafter-short-dagger.yaml", ImproveConfig)
    assert (cfg.profile, cfg.teacher, cfg.targets, cfg.observation) == (SHORT, "crafter-memory", "teacher", "memory")
    assert cfg.model == load_planner_profile(SHORT, {"server": None}).model.split("/")[-1]  # type: ignore[union-attr]
    assert [t.id for t in cfg.tasks] == ["crafter:"] and cfg.tasks[0].kwargs == {"odometry": True}
    assert cfg.skills == "skills_crafter_memory" and cfg.max_decisions == 150
    # the student plays with every skill listed, as it was trained and is evaluated: with the agent's
    # default (12 shown), the first DAgger run's student saw no `explore`, and its teacher, given the
    # same 12, gave up in 531 of 847 states
    import yaml

    from polar.evals.improve import student_suite

    arm = next(a for a in yaml.safe_load((REPO / "evals" / "crafter_memory.yaml").read_text())["agents"]
               if a["name"] == "polar-planner-crafter-short")
    agent = student_suite(cfg, "s", {}, cfg.tasks, [0], 1, 0)["agents"][0]
    assert agent["skills_shown"] == arm["skills_shown"] == 40
