"""The owner record (`polar.ownership`): a process named by pid and start time, a run id its
children inherit, and cache entries that say who made them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from polar import ownership


def test_a_process_is_alive_only_while_it_runs_under_its_recorded_start():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ticks = ownership.start_ticks(proc.pid)
    assert ownership.process_alive(proc.pid, ticks)
    assert not ownership.process_alive(proc.pid, ticks - 1)  # another process that had this pid
    proc.kill()
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # dead, not yet reaped: a zombie
    assert ownership.start_ticks(proc.pid) == ticks and not ownership.process_alive(proc.pid, ticks)
    proc.wait()
    assert not ownership.process_alive(proc.pid, ticks) and ownership.start_ticks(proc.pid) is None


def test_the_run_id_is_exported_to_children_and_names_the_owner(monkeypatch):
    monkeypatch.delenv(ownership.RUN_ENV)
    rid = ownership.run_id()
    assert os.environ[ownership.RUN_ENV] == rid and ownership.run_id() == rid
    child = subprocess.run([sys.executable, "-c", "from polar import ownership; print(ownership.run_id())"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert child.stdout.strip() == rid  # a worker or subprocess belongs to the same run
    owner = ownership.owner_record()
    assert owner["pid"] == os.getpid() and owner["run"] == rid and owner["workspace"] == os.getcwd()
    assert owner["checkout"] == str(Path(ownership.__file__).resolve().parents[1])
    assert ownership.owned_by_run({"owner": owner}) and not ownership.owned_by_run({"owner": {"run": "other"}})
    assert not ownership.owned_by_run({})  # no owner recorded: nobody's run


def test_a_cache_folder_says_who_made_it(tmp_path):
    from polar.llm.finetune import _materialise

    out = _materialise(tmp_path / "checkpoints" / "m-1", lambda d: (d.mkdir(parents=True), (d / "w.bin").write_bytes(b"w")))
    note = json.loads((tmp_path / "checkpoints" / "m-1.owner.json").read_text())
    assert (out / "w.bin").read_bytes() == b"w"
    assert note["pid"] == os.getpid() and note["run"] == ownership.run_id() and note["made_at"] > 0
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["m-1", "m-1.owner.json"]
