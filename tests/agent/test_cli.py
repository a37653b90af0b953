"""`polar task` with an LLM planner, end to end through real HTTP: the scripted
OpenAI-compatible server on 127.0.0.1, the real litellm client, the real CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.llm_server import Reply, ScriptedLLMServer, write_profile

HARNESS = "minigrid:MiniGrid-DoorKey-5x5-v0"
TASK = "use the key to open the door and then get to the goal"
REPO = Path(__file__).resolve().parents[2]


def polar_task(tmp_path: Path, planner: Path, out: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "POLAR_SKILLS": str(REPO / "skills")}
    r = subprocess.run(
        [sys.executable, "-m", "polar", "task", TASK, "--harness", HARNESS, "--planner", str(planner),
         "--seed", "0", "--out", str(tmp_path / out), *extra],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    rec_path = tmp_path / out / "episode.json"
    return r, (json.loads(rec_path.read_text()) if rec_path.exists() else {})


LEFT = {"kind": "skill", "skill": "left", "reason": "look around"}
GIVE_UP = {"kind": "finish", "success": False, "reason": "scripted end"}


def test_retries_repair_tokens_and_replay_cache(tmp_path):
    with ScriptedLLMServer() as server:
        server.push(
            Reply.error(429, retry_after=0.1),  # rate-limited: honoured, retried
            Reply.error(500),  # server error: retried
            Reply.text("Sure! here it is: {oops", usage=(50, 7)),  # malformed: repair round
            Reply.decision(LEFT, usage=(300, 20)),
            Reply.decision(GIVE_UP, usage=(320, 15)),
        )
        p = write_profile(tmp_path, server)
        r, rec = polar_task(tmp_path, p, "first")
        assert r.returncode == 1, r.stderr  # the planner gave up: not a success
        assert [d["decision"]["kind"] for d in rec["decisions"]] == ["skill", "finish"]
        assert rec["decisions"][0]["outcomes"][0]["success"] is True
        assert rec["failure_cause"] == "planner-gave-up"
        # tokens: exactly what the server reported for the answered calls
        assert rec["prompt_tokens"] == 50 + 300 + 320 and rec["completion_tokens"] == 7 + 20 + 15
        assert rec["llm_calls"] == 3
        sent = server.request_count
        assert sent == 5
        # the same run again is served from the replay cache: the server sees nothing new
        r2, rec2 = polar_task(tmp_path, p, "second")
        assert server.request_count == sent
        assert [d["decision"] for d in rec2["decisions"]] == [d["decision"] for d in rec["decisions"]]
        assert rec2["llm_calls"] == 0  # cached calls cost nothing
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert any(c.get("cached") for c in calls)


def test_exhausted_budget_ends_the_episode_with_that_status(tmp_path):
    with ScriptedLLMServer(default=Reply.decision(LEFT)) as server:
        p = write_profile(tmp_path, server, budgets={"max_calls": 3})
        r, rec = polar_task(tmp_path, p, "run")
        assert r.returncode == 1
        assert rec["failure_cause"] == "budget"
        assert "budget" in rec["failure_detail"].lower()
        assert server.request_count == 3


def test_hanging_server_times_out_as_an_llm_error(tmp_path):
    """A model that cannot be reached is `llm-error` (not a parse failure), with its own exit code."""
    with ScriptedLLMServer(default=Reply(hang=True)) as server:
        p = write_profile(tmp_path, server, timeout_s=0.5, retries={"max_attempts": 1})
        r, rec = polar_task(tmp_path, p, "run")
        assert r.returncode == 3  # not 1, "task not solved"
        assert rec["failure_cause"] == "llm-error"
        assert "time" in rec["failure_detail"].lower()


def test_a_persistent_429_is_an_llm_error_with_its_failed_attempts_in_the_record(tmp_path):
    with ScriptedLLMServer(default=Reply.error(429, "rate limited", retry_after=0.01)) as server:
        p = write_profile(tmp_path, server, retries={"max_attempts": 3, "initial_wait_s": 0.01})
        r, rec = polar_task(tmp_path, p, "run")
        assert server.request_count == 3
    assert r.returncode == 3 and rec["failure_cause"] == "llm-error"
    (call,) = rec["decisions"][0]["llm_calls"]
    assert call["attempts"] == 3 and "rate limited" in call["error"]
    assert [a["status"] for a in call["failed_attempts"]] == [429, 429, 429]
    assert all(a["latency_s"] > 0 for a in call["failed_attempts"])


@pytest.mark.parametrize("bad", ["not even json", json.dumps({"decision": {"kind": "skill"}})])
def test_reply_that_never_validates_is_never_executed(tmp_path, bad):
    with ScriptedLLMServer(default=Reply.text(bad)) as server:
        p = write_profile(tmp_path, server, repair_rounds=1)
        r, rec = polar_task(tmp_path, p, "run")
        assert rec["failure_cause"] == "planner-parse"
        assert rec["env_steps"] == 0
        assert server.request_count == 2  # the reply and one repair round


def test_policy_code_runs_sandboxed_and_its_failure_feeds_back(tmp_path):
    hostile = "import os\ndef act(obs):\n    return 0\n"
    balance = "def act(obs):\n    return 1 if obs[2] + 0.5 * obs[3] > 0 else 0\n"
    with ScriptedLLMServer() as server:
        server.push(Reply.decision({"kind": "code", "source": hostile}),
                    Reply.decision({"kind": "code", "source": balance}))
        p = write_profile(tmp_path, server, mode="code")
        env = {**os.environ, "POLAR_SKILLS": str(REPO / "skills")}
        r = subprocess.run(
            [sys.executable, "-m", "polar", "task", "balance the pole", "--harness", "gym:CartPole-v1",
             "--planner", str(p), "--out", str(tmp_path / "run"), "--sandbox", "strict"],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        rec = json.loads((tmp_path / "run" / "episode.json").read_text())
    first, second = (d["outcomes"][0] for d in rec["decisions"])
    assert first["error_type"] == "SandboxViolation" and first["steps"] == 0, first
    # the second request carried the violation back to the model
    assert "SandboxViolation" in json.dumps(server.requests[1].body["messages"])
    assert second["error_type"] is None and second["steps"] == 500  # balanced to the time limit
    assert rec["env_steps"] == 500 and rec["episode_return"] == 500.0
    # CartPole reports no success; its spec's survival rule says balancing to the limit is one
    assert rec["truncated"] and rec["success"] and rec["extra"]["success_source"] == "harness-rule"
    assert second["success"] and r.returncode == 0, r.stdout


def test_good_plan_succeeds_with_the_shipped_skills(tmp_path):
    plan = {"kind": "plan", "reason": "fetch the key, open the door, reach the goal", "steps": [
        {"kind": "skill", "skill": "goto", "args": {"object": "key", "color": "yellow"}},
        {"kind": "skill", "skill": "pickup", "args": {"object": "key", "color": "yellow"}},
        {"kind": "skill", "skill": "goto", "args": {"object": "door", "color": "yellow"}},
        {"kind": "skill", "skill": "toggle", "args": {"color": "yellow"}},
        {"kind": "skill", "skill": "goto", "args": {"object": "goal"}},
    ]}
    with ScriptedLLMServer() as server:
        server.push(Reply.decision(plan, usage=(900, 120)))
        r, rec = polar_task(tmp_path, write_profile(tmp_path, server, mode="plan"), "run")
        assert r.returncode == 0, r.stdout + r.stderr
        assert rec["success"] and rec["failure_cause"] is None
        assert server.request_count == 1  # one plan, executed to the goal
        outcomes = rec["decisions"][0]["outcomes"]
        assert [o["skill"].split("@")[0] for o in outcomes] == ["goto", "pickup", "goto", "toggle", "goto"]
        assert all(o["success"] and o["cause"] is None for o in outcomes)
        assert (rec["prompt_tokens"], rec["completion_tokens"]) == (900, 120)
        # the prompt showed the skills with their measured success
        assert "goto" in json.dumps(server.requests[0].body["messages"])


PICKUP = {"kind": "skill", "skill": "pickup", "args": {}}  # nothing in front at seed 0: fails in 1 step


def test_a_repeated_failing_decision_is_told_and_its_prompt_not_replayed(tmp_path):
    """The model repeats one failing call. Its third failure is in the next prompt's feedback;
    a prompt identical to one whose decision failed goes to the model, not to the replay
    cache; the summary's call count is the budget's."""
    with ScriptedLLMServer(default=Reply.decision(PICKUP)) as server:
        # the student template shows the facts and the last outcome only, so the prompts
        # after the 2nd and 3rd failure are identical until the repeat note changes them
        p = write_profile(tmp_path, server, budgets={"max_calls": 5}, observation="predicates", history_window=1,
                          templates={"system": "student_system", "user": "student_skill"})
        r, rec = polar_task(tmp_path, p, "first")
        assert rec["failure_cause"] == "budget" and "5 calls made" in rec["failure_detail"]
        assert server.request_count == 5  # the 3rd prompt repeats the 2nd, whose decision failed: asked again
        prompts = [q.messages[-1]["content"] for q in server.requests]
        assert prompts[1] == prompts[2] and prompts[0] != prompts[1]
        note = "pickup() has failed 3 times in a row; the same decision will fail again"
        assert [note in t for t in prompts] == [False, False, False, True, False]
        assert "pickup() has failed 4 times in a row" in prompts[4]
        third = rec["decisions"][2]["llm_calls"][0]
        assert third["cached"] is False and "failed earlier" in third["replay_skipped"]
        assert "5 LLM calls, " in r.stdout and "budget" in r.stdout

        # the same episode again: every prompt is in the cache, but the repeat is asked again
        r2, rec2 = polar_task(tmp_path, p, "second")
        assert server.request_count == 6
        assert [c["cached"] for d in rec2["decisions"] for c in d["llm_calls"]] == [True, True, False, True, True]
        assert rec2["failure_cause"] == "budget" and "5 calls made" in rec2["failure_detail"]
        assert "5 LLM calls (4 from the replay cache)" in r2.stdout


def test_honest_labels_for_a_false_claim_and_an_empty_library(tmp_path):
    with ScriptedLLMServer(default=Reply.decision({"kind": "finish", "success": True})) as server:
        p = write_profile(tmp_path, server)
        r, rec = polar_task(tmp_path, p, "claim")
        assert r.returncode == 1
        # MiniGrid reports success itself (its reward), so the environment judges the claim
        assert rec["failure_cause"] == "planner-false-claim" and "judged by harness" in rec["failure_detail"]
    (tmp_path / "empty").mkdir()
    with ScriptedLLMServer(default=Reply.decision(PICKUP)) as server:  # a skill call, and no skill to call
        p = write_profile(tmp_path, server)
        r, rec = polar_task(tmp_path, p, "noskills", "--skills", str(tmp_path / "empty"))
        assert r.returncode == 1 and rec["failure_cause"] == "no-skills", r.stdout
        assert "no skill is on offer" in rec["failure_detail"] and "available skills: none" in rec["failure_detail"]
