"""`polar prompts list | show | render` through the real CLI."""

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from polar.commands.app import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_list_show_render():
    out = runner.invoke(app, ["prompts", "list"])
    assert out.exit_code == 0 and "planner_skill" in out.output and "planner_system" in out.output
    out = runner.invoke(app, ["prompts", "show", "planner_code"])
    assert out.exit_code == 0 and "mode: code" in out.output and "def act" not in out.output.split("---")[0]
    ctx = ROOT / "prompts" / "examples" / "doorkey_context.json"
    out = runner.invoke(app, ["prompts", "render", "planner_skill", "--context", str(ctx)])
    assert out.exit_code == 0 and "open_door(color:" in out.output


def test_render_with_missing_variable_exits_with_the_name(tmp_path):
    ctx = tmp_path / "vars.json"
    ctx.write_text(json.dumps({"mode": "skill"}))
    proc = subprocess.run([sys.executable, "-m", "polar", "prompts", "render", "planner_system",
                           "--context", str(ctx)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "TemplateError" in proc.stderr and "missing input(s): allowed_kinds" in proc.stderr


def test_render_the_real_prompt_of_a_live_episode(tmp_path):
    out = runner.invoke(app, ["prompts", "render", "planner_skill", "--harness", "minigrid:MiniGrid-DoorKey-5x5-v0",
                              "--seed", "3"])
    assert out.exit_code == 0, out.output
    assert "Task: use the key to open the door and then get to the goal" in out.output
    assert "- goto(color:" in out.output and "[success" in out.output  # the library's skills, measured
    again = runner.invoke(app, ["prompts", "render", "planner_skill", "-H", "minigrid:MiniGrid-DoorKey-5x5-v0",
                                "--seed", "3"])
    assert again.output == out.output  # the seed fixes the episode
    code = runner.invoke(app, ["prompts", "render", "planner_code", "-H", "gym:CartPole-v1", "--seed", "0"])
    assert code.exit_code == 0, code.output
    sample = code.output.split("act(obs) receives this observation as JSON (lists, numbers, strings):\n")[1]
    values = json.loads(sample.splitlines()[0])
    assert len(values) == 4 and all(abs(v) < 0.05 for v in values)  # CartPole's reset state
    view = runner.invoke(app, ["prompts", "render", "planner_skill", "-H", "minigrid:MiniGrid-DoorKey-5x5-v0",
                               "--observation", "view"])
    assert view.exit_code == 0 and "What holds now" not in view.output and "What holds now" in out.output


def test_render_needs_exactly_one_source_and_refuses_a_symbolic_profile():
    both = runner.invoke(app, ["prompts", "render", "planner_skill"])
    assert both.exit_code != 0 and "exactly one of --harness" in str(both.exception or both.output)
    sym = runner.invoke(app, ["prompts", "render", "planner_skill", "-H", "gym:CartPole-v1", "--planner", "symbolic"])
    assert sym.exit_code != 0 and "renders no prompt" in str(sym.exception or sym.output)
