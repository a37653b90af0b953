"""`polar prompts list | show | render` through the real CLI."""

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from polar.cli import app

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
    proc = subprocess.run([sys.executable, "-m", "polar.cli", "prompts", "render", "planner_system",
                           "--context", str(ctx)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "TemplateError" in proc.stderr and "missing input(s): allowed_kinds" in proc.stderr
