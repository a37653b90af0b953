"""`polar task --sandbox`: a profile name or path whose limits reach the policy run, and
`none` refusing policy code; through the real CLI and the scripted LLM server."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.llm_server import Reply, ScriptedLLMServer, write_profile

REPO = Path(__file__).resolve().parents[1]
BALANCE = "def act(obs):\n    return 1 if obs[2] + 0.5 * obs[3] > 0 else 0\n"


def run_task(tmp_path: Path, server: ScriptedLLMServer, sandbox: str) -> tuple[subprocess.CompletedProcess, dict]:
    p = write_profile(tmp_path, server, mode="code")
    env = {**os.environ, "POLAR_SKILLS": str(REPO / "skills")}
    r = subprocess.run(
        [sys.executable, "-m", "polar", "task", "balance the pole", "--harness", "gym:CartPole-v1",
         "--planner", str(p), "--out", str(tmp_path / "run"), "--sandbox", sandbox],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    path = tmp_path / "run" / "episode.json"
    return r, (json.loads(path.read_text()) if path.exists() else {})


def test_a_profile_path_sets_the_limits_of_policy_code(tmp_path: Path) -> None:
    profile = tmp_path / "short.yaml"
    profile.write_text("backend: restricted\nlimits:\n  max_env_steps: 40\n")
    with ScriptedLLMServer() as server:
        server.push(Reply.decision({"kind": "code", "source": BALANCE}),
                    Reply.decision({"kind": "finish", "success": False, "reason": "done"}))
        r, rec = run_task(tmp_path, server, str(profile))
    outcome = rec["decisions"][0]["outcomes"][0]
    assert outcome["steps"] == 40 and outcome["stopped_by"] == "step_limit", r.stdout + r.stderr


def test_sandbox_none_refuses_policy_code(tmp_path: Path) -> None:
    with ScriptedLLMServer() as server:
        server.push(Reply.decision({"kind": "code", "source": BALANCE}),
                    Reply.decision({"kind": "finish", "success": False, "reason": "no code allowed"}))
        r, rec = run_task(tmp_path, server, "none")
    outcome = rec["decisions"][0]["outcomes"][0]
    assert outcome["error_type"] == "SandboxDisabled" and outcome["steps"] == 0, r.stdout + r.stderr
    assert "sandbox: none" in outcome["reason"] and rec["env_steps"] == 0


def test_an_unknown_profile_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with ScriptedLLMServer() as server:
        r, rec = run_task(tmp_path, server, "nosuch")
        assert server.request_count == 0
    assert r.returncode == 2 and rec == {}
    assert r.stderr.strip().startswith("ConfigError: sandbox profile 'nosuch' not found")
