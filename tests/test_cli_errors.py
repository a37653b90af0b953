"""The CLI's last-resort handler: an error no part of Polar anticipated prints its type and
message (exit 1) and leaves the traceback in a log file whose path it prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.test_bad_inputs import make_run_dir

ROOT = Path(__file__).resolve().parents[1]


def test_an_unexpected_error_is_one_message_and_a_log_file(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run")
    config = json.loads((run / "policy.json").read_text())
    config["network"]["hidden"] = [0]  # a saved policy the RL engine's loader does not expect
    (run / "policy.json").write_text(json.dumps(config))
    logs = tmp_path / "logs"
    p = subprocess.run(
        [sys.executable, "-m", "polar", "skills", "register", str(run), "--name", "x",
         "--description", "d", "--termination", "at(goal)", "-L", str(tmp_path / "lib")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "POLAR_LOG_DIR": str(logs), "COLUMNS": "300"})
    assert p.returncode == 1
    assert "Traceback" not in p.stderr and p.stderr.startswith("ValidationError: ")
    m = re.search(r"the traceback is in (\S+\.log)", p.stderr)
    assert m, p.stderr
    log = Path(m.group(1))
    assert log.parent == logs and "Traceback (most recent call last)" in log.read_text()
    assert "skills register" in log.read_text().splitlines()[0]
    assert not (tmp_path / "lib").exists()


SLOW_COMMAND = '''
import sys, time
from pathlib import Path
from polar.commands import app as cli

MARKER = Path(sys.argv[1])

@cli.app.command("slow-for-test")
def slow() -> None:
    try:
        print("ready", flush=True)
        time.sleep(120)
    finally:  # where a command stops the servers and sandboxes it started
        MARKER.write_text("cleaned up")

sys.argv = ["polar", "slow-for-test"]
cli.main()
'''


def test_sigterm_unwinds_a_command_so_its_cleanup_runs(tmp_path: Path) -> None:
    """`kill PID` (SIGTERM) stops a command as Ctrl-C does: its `finally` blocks run (a
    killed `polar llm rl` used to leave its model server running), exit status 128 + 15."""
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_COMMAND, str(marker)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert marker.read_text() == "cleaned up" and "terminated" in err
