"""Prompts that fit: observation modes and the history-trimming rule."""

from pathlib import Path

import pytest

from polar.errors import PlannerError
from polar.harnesses.base import SymbolicObject, SymbolicState
from polar.planners.base import HistoryItem, PlannerContext
from polar.planners.choose import default_planner, language_model
from polar.planners.fit import PromptTooLong, apply_observation_mode, fit_prompt, symbolic_text
from polar.planners.llm import template_variables
from polar.prompts.templates import load_template

CONTEXT = Path(__file__).resolve().parents[2] / "prompts" / "examples" / "doorkey_context.json"


@pytest.fixture
def context() -> PlannerContext:
    ctx = PlannerContext.model_validate_json(CONTEXT.read_text())
    state = ctx.symbolic.model_copy(update={
        "objects": [SymbolicObject(type="key", color="yellow", pos=(2, 4)),
                    SymbolicObject(type="door", color="yellow", pos=(4, 3), state="locked")],
        "agent": {"pos": [1, 2], "dir": "east", "carrying": {"type": "key", "color": "yellow"}}})
    return ctx.model_copy(update={"symbolic": state})


def test_observation_modes_show_what_they_say(context):
    v = template_variables(context, "skill")
    pred = apply_observation_mode(v, context.symbolic, "predicates")
    assert pred["observation"] == symbolic_text(context.symbolic)
    assert pred["observation"] == ("agent at (1,2) facing east, carrying yellow key; key(yellow) at (2,4); "
                                   "door(yellow, locked) at (4,3)")
    assert pred["predicates"] == v["predicates"]
    view = apply_observation_mode(v, context.symbolic, "view")
    assert view["predicates"] == [] and view["goal"] == [] and view["observation"] == context.observation
    full = apply_observation_mode(v, context.symbolic, "full")
    assert full["predicates"] and full["observation"] == context.observation
    with pytest.raises(PlannerError, match="observation: view"):
        apply_observation_mode(v, None, "predicates")


def test_compact_templates_render_both_modes_shorter(context):
    v = template_variables(context, "skill")
    user = load_template("compact_skill")
    pred = user.render(apply_observation_mode(v, context.symbolic, "predicates"))
    view = user.render(apply_observation_mode(v, context.symbolic, "view"))
    assert "Facts: carrying(key,yellow)" in pred and "Goal: at(goal)" in pred
    assert "Facts" not in view and "Goal:" not in view and context.observation in view
    full = load_template("planner_skill").render(v)
    assert len(pred) < 0.8 * len(full)
    assert "- pickup(object, color): Pick up an object next to the agent. Needs next_to(OBJECT,COLOR)." in pred


def _history(n):
    return [HistoryItem(decision=f"left #{i}", success=True, steps=1, reward=0.0, reason="ok") for i in range(n)]


def test_history_is_trimmed_oldest_first_until_the_prompt_fits():
    def render(k):
        return [{"role": "user", "content": "x" * 100 + "h" * 10 * k}]

    count = lambda m: len(m[0]["content"])  # noqa: E731 - one token per character
    fit = fit_prompt(render, history_len=12, window=8, count=count, context_tokens=200, reply_tokens=30,
                     template="t")
    assert (fit.history_shown, fit.history_dropped, fit.tokens) == (7, 1, 170)
    # without a counter nothing is checked and the window decides
    fit = fit_prompt(render, history_len=3, window=8, count=None, context_tokens=200, reply_tokens=30, template="t")
    assert (fit.history_shown, fit.tokens) == (3, None)
    with pytest.raises(PromptTooLong) as err:
        fit_prompt(render, history_len=2, window=8, count=count, context_tokens=120, reply_tokens=30,
                   template="compact_system+compact_skill")
    msg = str(err.value)
    assert "needs 100 tokens even with no history" in msg and "context window is 120 tokens" in msg
    assert "compact_system+compact_skill" in msg and "n_ctx" in msg


@pytest.mark.parametrize(("task", "planner"), [
    ("use the key to open the door and then get to the goal", "symbolic"),
    ("pick up the blue key and then go to the goal", "symbolic"),
    ("grab the key, unlock the door, then head for the green square", "llm"),
    ("fetch me a coffee", "llm"),
    ("go to the door the mission names", "llm"),  # 'the mission names' is not read (no harness given)
])
def test_a_task_the_symbolic_planner_cannot_parse_goes_to_a_language_model(task, planner):
    chosen, why = default_planner(task)
    if planner == "llm":  # the trained planner, or the base model where it cannot run (tests/planners/test_choose.py)
        assert chosen == language_model("x")[0] and "cannot parse" in why
    else:
        assert chosen == planner


def test_student_templates_show_every_skill_the_facts_and_the_last_four_outcomes(context):
    v = template_variables(context.model_copy(update={"history": _history(6)}), "skill")
    user = load_template("student_skill").render(apply_observation_mode(v, context.symbolic, "predicates"))
    lines = user.splitlines()
    assert lines[0] == f"Task: {context.task}" and lines[-1] == "Next?"
    assert lines[1] == "Skills: " + " ".join(
        s.name + (f"({','.join(s.parameters)})" if s.parameters else "") for s in context.skills)
    assert "Facts: " + " ".join(context.symbolic.predicates) in lines
    assert "Done: left #2 ok; left #3 ok; left #4 ok; left #5 ok" in lines  # the last four only
    assert len(user) < 0.5 * len(load_template("compact_skill").render(
        apply_observation_mode(v, context.symbolic, "predicates")))
    system = load_template("student_system").render({"allowed_kinds": ["skill", "finish"]})
    assert '{"decision": {"kind": "finish", "success": true}}' in system and len(system) < 200


def test_a_maze_state_reads_as_a_cell():
    state = SymbolicState(predicates=["at_cell(4,6)"], objects=[SymbolicObject(type="goal", pos=(6, 2))],
                          agent={"cell": [4, 6], "xy": [2.26, -0.34], "velocity": [0.0, 0.0]})
    assert symbolic_text(state) == "agent in cell (4,6); goal at (6,2)"
    assert symbolic_text(SymbolicState(agent={"pos": [3, 0]})) == "agent at (3,0)"  # no direction, nothing carried
