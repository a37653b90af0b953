"""LLMPlanner end to end through real HTTP: profile -> templates -> litellm -> scripted server."""

import json
from pathlib import Path

import pytest

from polar.errors import BudgetExceeded, ConfigError, LLMError, PlannerError
from polar.llm.record import read_records
from polar.planners.base import Planner, PlannerContext
from polar.planners.decisions import Finish, Plan, PolicyCode, SkillCall
from polar.planners.profile import LLMProfile, load_planner, load_planner_profile
from tests.llm_server import Reply, ScriptedLLMServer, write_profile

CONTEXT = Path(__file__).resolve().parents[2] / "prompts" / "examples" / "doorkey_context.json"
OPEN_DOOR = {"kind": "skill", "skill": "open_door", "args": {"color": "yellow"}, "reason": "I carry the key"}


@pytest.fixture
def server():
    with ScriptedLLMServer() as s:
        yield s


@pytest.fixture
def context() -> PlannerContext:
    return PlannerContext.model_validate_json(CONTEXT.read_text())


def test_good_reply_becomes_a_decision_with_call_records(server, context, tmp_path):
    server.push(Reply.decision(OPEN_DOOR, usage=(812, 31)))
    planner = load_planner(write_profile(tmp_path, server))
    assert isinstance(planner, Planner) and planner.name == "llm:profile"
    decision = planner.decide(context)
    assert decision == SkillCall(skill="open_door", args={"color": "yellow"}, reason="I carry the key")
    [call] = planner.last_calls
    assert (call.prompt_tokens, call.completion_tokens, call.cached) == (812, 31, False)
    assert call.template == "planner_system+planner_skill" and len(call.template_hash) == 12
    assert planner.usage.calls == 1 and planner.usage.tokens == 843
    sent = server.requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user"]
    assert context.task in sent[1]["content"] and "open_door(color:" in sent[1]["content"]
    assert "carrying(key,yellow)" in sent[1]["content"]  # the symbolic predicates
    assert "termination holds" in sent[1]["content"]  # the history with outcomes
    [rec] = read_records(tmp_path / "calls.jsonl")
    assert rec.episode_id == context.episode_id and rec.valid and rec.prompt_tokens == 812


def test_malformed_json_is_repaired_on_the_second_round(server, context, tmp_path):
    server.push(Reply.text('Sure! {"decision": {"kind": "skill", "skill": "open_door", "args": {"color": '),
                Reply.text("```json\n" + json.dumps({"decision": OPEN_DOOR}) + "\n```"))
    planner = load_planner(write_profile(tmp_path, server))
    assert planner.decide(context).skill == "open_door"
    assert len(planner.last_calls) == 2 and server.request_count == 2
    repair = server.requests[1].messages
    assert repair[-2]["role"] == "assistant" and repair[-2]["content"].startswith("Sure!")
    assert "not valid JSON" in repair[-1]["content"]
    assert [r.valid for r in read_records(tmp_path / "calls.jsonl")] == [False, True]


def test_wrong_kind_unknown_skill_and_bad_argument_are_sent_back(server, context, tmp_path):
    server.push(Reply.decision({"kind": "code", "source": "def act(obs):\n    return 2\n"}),
                Reply.decision({"kind": "skill", "skill": "teleport"}),
                Reply.decision({"kind": "skill", "skill": "open_door", "args": {"color": "pink"}}),
                Reply.decision(OPEN_DOOR))
    planner = load_planner(write_profile(tmp_path, server, repair_rounds=3))
    assert planner.decide(context).skill == "open_door"
    feedback = [r.messages[-1]["content"] for r in server.requests[1:]]
    assert "kind 'code' is not allowed" in feedback[0]
    assert "unknown skill 'teleport'" in feedback[1] and "open_door" in feedback[1]
    assert "color='pink' is not one of" in feedback[2]


def test_no_valid_reply_after_repairs_is_a_planner_error(server, context, tmp_path):
    server.push(*[Reply.text("I would open the door.")] * 3)
    planner = load_planner(write_profile(tmp_path, server, repair_rounds=2))
    with pytest.raises(PlannerError, match=r"no valid decision after 3 replies.*no JSON object"):
        planner.decide(context)
    assert len(planner.last_calls) == 3


def test_plan_and_code_modes(server, context, tmp_path):
    plan = {"kind": "plan", "steps": [OPEN_DOOR, {"kind": "skill", "skill": "goto_goal"}]}
    server.push(Reply.decision(plan))
    planner = load_planner(write_profile(tmp_path, server, mode="plan"))
    assert isinstance(planner.decide(context), Plan)
    assert "plan" in server.requests[-1].messages[0]["content"]
    server.push(Reply.decision({"kind": "code", "source": "def act(obs)\n    return 2\n"}),
                Reply.decision({"kind": "code", "source": "def policy(obs):\n    return 2\n"}),
                Reply.decision({"kind": "code", "source": "def act(obs):\n    return 2\n", "max_steps": 20}))
    planner = load_planner(write_profile(tmp_path, server, mode="code"))
    assert isinstance(planner.decide(context), PolicyCode)
    assert "syntax error at line 1" in server.requests[-2].messages[-1]["content"]
    assert "does not define the function act(obs)" in server.requests[-1].messages[-1]["content"]


def test_retries_reach_the_planner_through_http(server, context, tmp_path):
    server.push(Reply.error(429, retry_after=0.2), Reply.error(500), Reply.decision(OPEN_DOOR))
    planner = load_planner(write_profile(tmp_path, server))
    assert planner.decide(context).skill == "open_door"
    assert server.request_count == 3 and len(planner.last_calls) == 1


def test_hanging_server_ends_in_a_clear_llm_error_not_a_planner_error(server, context, tmp_path):
    server.push(Reply.hang_forever(), Reply.hang_forever())
    planner = load_planner(write_profile(tmp_path, server, timeout_s=0.3,
                                         retries={"max_attempts": 2, "initial_wait_s": 0.01}))
    with pytest.raises(LLMError, match=r"timed out \(timeout_s=0.3 per attempt\)") as err:
        planner.decide(context)
    assert not isinstance(err.value, PlannerError)


def test_budget_exhaustion_raises_and_reset_starts_a_new_episode(server, context, tmp_path):
    server.default = Reply.decision(OPEN_DOOR, usage=(100, 10))
    planner = load_planner(write_profile(tmp_path, server, cache_dir=None, budgets={"max_calls": 2}))
    planner.decide(context)
    planner.decide(context)
    with pytest.raises(BudgetExceeded, match="max_calls=2"):
        planner.decide(context)
    assert server.request_count == 2 and planner.last_calls == []
    planner.reset()
    assert planner.decide(context).skill == "open_door" and planner.usage.calls == 1


def test_budget_runs_out_during_repairs(server, context, tmp_path):
    server.default = Reply.text("nothing useful", usage=(500, 10))
    planner = load_planner(write_profile(tmp_path, server, budgets={"max_calls": None, "max_tokens": 1000}))
    with pytest.raises(BudgetExceeded, match="budgets.max_tokens=1000"):
        planner.decide(context)
    assert len(planner.last_calls) == 2  # what was spent stays visible to the episode record


def test_identical_second_run_is_served_from_the_cache(server, context, tmp_path):
    server.push(Reply.text("oops"), Reply.decision(OPEN_DOOR, usage=(700, 20)))
    profile = write_profile(tmp_path, server)
    first = load_planner(profile)
    d1 = first.decide(context)
    assert server.request_count == 2
    second = load_planner(profile)  # a fresh process would do the same: the cache is on disk
    d2 = second.decide(context)
    assert d2 == d1 and server.request_count == 2
    assert [c.cached for c in second.last_calls] == [True, True]
    assert second.last_calls[1].prompt_tokens == 700
    assert second.usage.calls == 2  # replays are charged like live calls, so budgets replay too


def test_structured_output_sends_the_decision_schema(server, context, tmp_path):
    server.push(Reply.decision({"kind": "finish", "success": True}))
    planner = load_planner(write_profile(tmp_path, server, structured_output="json_schema"))
    assert planner.decide(context) == Finish(success=True)
    rf = server.requests[0].body["response_format"]
    assert rf["type"] == "json_schema" and "decision" in rf["json_schema"]["schema"]["properties"]


def test_bad_profile_key_names_the_field(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("backend: llm\nmodel: openai/x\ntemprature: 0.3\n")
    with pytest.raises(ConfigError, match=r"typo.yaml: temprature: unknown key"):
        load_planner_profile(path)
    path.write_text("backend: llm\nmodel: openai/x\nbudgets: {max_calls: 0}\n")
    with pytest.raises(ConfigError, match=r"budgets.max_calls"):
        load_planner_profile(path)
    path.write_text("backend: neural\n")
    with pytest.raises(ConfigError, match=r"backend: expected one of llm, symbolic, maze, got 'neural'"):
        load_planner_profile(path)
    with pytest.raises(ConfigError, match="not found.*local-test"):
        load_planner_profile("no-such-profile")


def test_shipped_profiles_load():
    for name in ("openai", "vllm", "local-test", "local", "gemma3", "student", "polar-planner"):
        profile = load_planner_profile(name)
        assert isinstance(profile, LLMProfile) and profile.name == name
    gemma = load_planner_profile("gemma3")  # the second embedded model runs beside SmolLM2's server
    assert gemma.api_base == "http://127.0.0.1:8013/v1" and gemma.system_message == "user"
    trained = load_planner_profile("polar-planner")  # the shipped adapter, on its own port
    assert trained.server.model == "polar-planner" and trained.api_base == "http://127.0.0.1:8015/v1"


def test_template_mode_must_match_the_profile(server, tmp_path):
    # checked when the profile is loaded (naming the file and the field), not at the first call
    with pytest.raises(ConfigError, match=r"profile.yaml: templates.user: .*is for mode 'code'"):
        load_planner_profile(write_profile(tmp_path, server, templates={"user": "planner_code"}))
    with pytest.raises(ConfigError, match=r"templates.user: no prompt template named 'nope'"):
        load_planner_profile(write_profile(tmp_path, server, templates={"user": "nope"}))


@pytest.mark.parametrize("observation", ["predicates", "view"])
def test_a_maze_gets_reach_with_a_cell_or_the_goal_in_both_observation_modes(server, tmp_path, observation):
    """The LLM planner on PointMaze with the shipped library: the compact prompt shows the
    state in the profile's observation mode, the schema offers reach(row, col) or reach(),
    and a call naming half a cell is sent back."""
    from polar.agent.context import live_context
    from polar.harnesses.registry import make_harness
    from polar.skills.search_path import open_library

    harness = make_harness("maze:PointMaze_UMaze-v3")
    try:
        context = live_context(harness, 0, open_library(None), task="go to the goal")
    finally:
        harness.close()
    assert [s.name for s in context.skills] == ["reach"]
    server.push(Reply.decision({"kind": "skill", "skill": "reach", "args": {"row": 1}}),
                Reply.decision({"kind": "skill", "skill": "reach", "args": {"row": 3, "col": 2}}))
    planner = load_planner(write_profile(tmp_path, server, observation=observation, structured_output="json_object_schema",
                                         templates={"system": "compact_system", "user": "compact_skill"}))
    assert planner.decide(context) == SkillCall(skill="reach", args={"row": 3, "col": 2})
    first, repair = server.requests
    prompt = first.messages[1]["content"]
    if observation == "predicates":
        assert "State: agent in cell (3,1); goal at (3,2)" in prompt and "adjacent(3,1,3,2)" in prompt
    else:
        assert "Maze 5x5" in prompt and "adjacent(" not in prompt and "Facts:" not in prompt
    args = first.body["response_format"]["schema"]["properties"]["decision"]["anyOf"][0]["properties"]["args"]
    assert [form["required"] for form in args["anyOf"]] == [["col", "row"], []]
    assert "give col, row together" in repair.messages[-1]["content"]


def test_explore_skills_forces_an_applicable_skill_into_the_schema(server, context, tmp_path):
    """RL's sampling exploration: with `explore_skills` the reply's schema offers one skill drawn from
    those whose preconditions hold, the model writes its arguments, and the record names the draw."""
    from polar.planners.base import SkillInfo
    from polar.planners.llm import forced_skill

    skills = [SkillInfo(name="explore", kind="policy", description="look for an object", parameters={"object": ["key", "goal"]}),
              SkillInfo(name="pickup", kind="primitive", description="pick up", parameters={"object": ["key"]},
                        preconditions=["facing({object},{color},{x},{y})", "not carrying(any,any)"]),
              SkillInfo(name="unlock", kind="primitive", description="unlock", parameters={"color": ["yellow"]},
                        preconditions=["carrying(key,{color})"])]
    ctx = context.model_copy(update={"skills": skills})
    drawn = {forced_skill(ctx.model_copy(update={"episode_id": f"e{k}"}), 1.0).name for k in range(40)}
    assert drawn == {"explore", "unlock"}  # pickup's preconditions do not hold: never drawn
    hidden = {forced_skill(ctx.model_copy(update={"episode_id": f"e{k}"}), 1.0, "view").name for k in range(40)}
    assert hidden == {"explore", "pickup", "unlock"}  # view mode: the hidden state does not pick
    assert forced_skill(ctx, 0.0) is None
    assert sum(forced_skill(ctx.model_copy(update={"episode_id": f"e{k}"}), 0.25) is not None for k in range(400)) in range(70, 131)

    forced = forced_skill(ctx, 1.0)
    reply = {"kind": "skill", "skill": forced.name, "args": {"object": "goal"} if forced.name == "explore" else {"color": "yellow"}}
    server.push(Reply.decision(reply), Reply.decision({"kind": "skill", "skill": "pickup", "args": {"object": "key"}}))
    on = load_planner(write_profile(tmp_path, server, structured_output="json_schema", explore_skills=1.0))
    assert on.decide(ctx).skill == forced.name and on.last_calls[0].forced_skill == forced.name
    offered = json.dumps(server.requests[0].body["response_format"])
    assert f'"{forced.name}"' in offered and '"pickup"' not in offered
    (tmp_path / "off").mkdir()
    off = load_planner(write_profile(tmp_path / "off", server, structured_output="json_schema"))
    assert off.decide(ctx).skill == "pickup" and getattr(off.last_calls[0], "forced_skill", None) is None
    assert all(f'"{s.name}"' in json.dumps(server.requests[1].body["response_format"]) for s in skills)
    assert [getattr(r, "forced_skill", None) for r in read_records(tmp_path / "calls.jsonl")] == [forced.name]


def test_noop_exclude_leaves_the_skills_that_just_did_nothing_out_of_the_schema(server, context, tmp_path):
    """`noop_exclude` (with the no-op guard): the skills of the history's trailing no-ops were called
    from this very state and did nothing, so the reply's schema leaves them out until a fact changes;
    the prompt is unchanged, the record names them, and a skill left as the only one is kept."""
    from polar.planners.base import HistoryItem, SkillInfo, idle_skills

    skills = [SkillInfo(name=n, kind="primitive", description=n) for n in ("drink_up", "explore", "chop_wood")]

    def item(decision: str, reason: str) -> HistoryItem:
        return HistoryItem(decision=decision, success=True, steps=0, reward=0.0, reason=reason)

    history = [item("drink_up()", "no-op: ok"), item("chop_wood()", "ok"),
               item("explore(thing=iron)", "no-op: ok"), item("drink_up()", "no-op: ok")]
    assert idle_skills(history) == {"drink_up", "explore"}
    assert idle_skills(history[:2]) == set()  # the last decision changed something: nothing is idle
    ctx = context.model_copy(update={"skills": skills, "history": history})
    server.push(Reply.decision({"kind": "skill", "skill": "chop_wood", "args": {}}),
                Reply.decision({"kind": "skill", "skill": "drink_up", "args": {}}))
    on = load_planner(write_profile(tmp_path, server, structured_output="json_schema", noop_guard=True,
                                    noop_exclude=True))
    assert on.decide(ctx).skill == "chop_wood" and on.last_calls[0].excluded_skills == ["drink_up", "explore"]
    offered = json.dumps(server.requests[0].body["response_format"])
    assert '"chop_wood"' in offered and '"drink_up"' not in offered and '"explore"' not in offered
    assert "drink_up" in server.requests[0].messages[1]["content"]  # the prompt still lists it
    (tmp_path / "off").mkdir()
    off = load_planner(write_profile(tmp_path / "off", server, structured_output="json_schema", noop_guard=True))
    assert off.decide(ctx).skill == "drink_up"  # without the option the schema offers every skill
    with pytest.raises(ConfigError, match="noop_exclude.*noop_guard"):
        load_planner_profile(write_profile(tmp_path / "off", server, noop_exclude=True))
