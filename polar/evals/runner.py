"""Run a suite: every cell (agent x harness x seed), in-process or over Ray workers, resumable.

Each finished cell is written atomically to `<out>/cells/<agent>/<harness>/seed-<s>.json`
together with a hash of everything that decides its result. A re-run loads the cells whose
hash still matches and runs only the others, so a suite killed half-way continues where it
stopped, and editing one agent re-runs that agent's cells only.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from polar.episode import EpisodeRecord
from polar.errors import PolarError
from polar.evals.agents import Preparation, inputs_fingerprint, make_agent, new_episode_id
from polar.evals.suite import Cell, HarnessEntry, Suite, load_suite
from polar.harnesses.base import Harness

if TYPE_CHECKING:
    from polar.evals.metrics import Results

CELL_FORMAT = "polar.evals.cell/1"


class CellResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = CELL_FORMAT
    cell: Cell
    key: str  # runner.cell_key: a changed config or input file invalidates the cell
    agent_kind: str
    harness_id: str
    prep: Preparation
    episodes: list[EpisodeRecord]
    wall_s: float
    finished_at: str


class RunSummary(BaseModel):
    """Which cells this invocation ran and which it took from disk (what resume is tested on)."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    out_dir: str
    ran: list[Cell] = Field(default_factory=list)
    skipped: list[Cell] = Field(default_factory=list)
    results: list[CellResult] = Field(default_factory=list)


def cell_path(out_dir: Path, cell: Cell) -> Path:
    return out_dir / "cells" / f"{cell.slug}.json"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # atomic on POSIX: a reader sees the old file or the new one


def cell_key(suite: Suite, cell: Cell, cache: dict[str, str] | None = None) -> str:
    """Suite.cell_key plus the fingerprint of the files the agent points to (cached per agent)."""
    cache = {} if cache is None else cache
    if cell.agent not in cache:
        cache[cell.agent] = inputs_fingerprint(suite.agent(cell.agent))
    return suite.cell_key(cell, cache[cell.agent])


def load_cell(out_dir: Path, suite: Suite, cell: Cell, key: str | None = None) -> CellResult | None:
    """The persisted result of a cell if it is complete and still matches the suite."""
    p = cell_path(out_dir, cell)
    if not p.is_file():
        return None
    try:
        res = CellResult.model_validate(json.loads(p.read_text()))
    except (ValueError, OSError):
        return None  # unreadable (e.g. written by another version): run it again
    if res.key != (key or cell_key(suite, cell)) or len(res.episodes) != suite.episodes:
        return None
    return res


def default_task(harness: Harness, env_seed: int, entry: HarnessEntry) -> str:
    """The task in words: the suite's, else the harness's mission for this start state."""
    if entry.task:
        return entry.task
    obs, _ = harness.reset(seed=env_seed)
    sym = harness.symbolic_state()
    if sym is not None and sym.mission:
        return sym.mission
    if isinstance(obs, dict) and isinstance(obs.get("mission"), str):
        return obs["mission"]
    return harness.spec.description.strip().split("\n")[0]


def make_suite_harness(entry: HarnessEntry) -> Harness:
    from polar.harnesses.registry import make_harness

    return make_harness(entry.id, **entry.kwargs)


def run_cell(suite: Suite, cell: Cell, out_dir: Path,
             on_episode: Callable[[], None] | None = None) -> CellResult:
    """Prepare the agent for this cell, play its episodes, and persist the result."""
    start = time.perf_counter()
    entry = suite.harness(cell.harness)
    agent = make_agent(suite.agent(cell.agent))
    try:
        prep = agent.prepare(entry, cell.seed, out_dir / "work" / cell.slug)
        harness = make_suite_harness(entry)
        try:
            records = []
            for i in range(suite.episodes):
                env_seed = suite.episode_seed(cell.seed, i)
                task = default_task(harness, env_seed, entry)
                rec = agent.episode(harness, task, env_seed, entry.max_steps, new_episode_id())
                records.append(rec.model_copy(update={"extra": {**rec.extra, "cell_seed": cell.seed,
                                                                "index": i, "agent_name": agent.name}}))
                if on_episode is not None:
                    on_episode()
        finally:
            harness.close()
    finally:
        agent.close()
    result = CellResult(
        cell=cell, key=cell_key(suite, cell), agent_kind=agent.kind, harness_id=entry.id, prep=prep,
        episodes=records, wall_s=time.perf_counter() - start,
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    _atomic_write(cell_path(out_dir, cell), result.model_dump_json(indent=1))
    return result


def _remote_cell(suite_json: str, cell_json: str, out_dir: str, cwd: str) -> str:
    """Ray task body: everything crosses as JSON text (no pickled live objects)."""
    import torch

    os.chdir(cwd)  # relative paths in the suite (skills, recipes, harness specs) mean the driver's
    torch.set_num_threads(1)  # one worker per core; torch's own threads would oversubscribe
    suite = Suite.model_validate_json(suite_json)
    res = run_cell(suite, Cell.model_validate_json(cell_json), Path(out_dir))
    return res.model_dump_json()


def check_harnesses(suite: Suite) -> None:
    """Create and close every harness once, so a bad id fails before hours of training."""
    for entry in suite.harnesses:
        h = make_suite_harness(entry)
        h.close()


def run_cells(
    suite_or_path: Suite | str | Path | dict,
    out_dir: str | Path,
    *,
    workers: int | None = None,
    progress: bool = True,
    only: Callable[[Cell], bool] | None = None,
) -> RunSummary:
    """Run every missing cell of a suite under `out_dir`; return all cell results and which
    cells ran now versus were reused from disk.

    `workers` overrides the suite's (0: in-process). `only` restricts which missing cells run
    this time (the rest stay missing), e.g. to split a suite across invocations.
    """
    suite = load_suite(suite_or_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / "suite.json", suite.model_dump_json(indent=1))
    n_workers = suite.workers if workers is None else workers
    if n_workers < 0:
        raise PolarError(f"workers: must be >= 0, got {n_workers}")

    summary = RunSummary(suite=suite.name, out_dir=str(out))
    todo: list[Cell] = []
    done: dict[str, CellResult] = {}
    keys: dict[str, str] = {}
    for cell in suite.cells():
        res = load_cell(out, suite, cell, cell_key(suite, cell, keys))
        if res is not None:
            summary.skipped.append(cell)
            done[cell.slug] = res
        elif only is None or only(cell):
            todo.append(cell)
    if todo:
        check_harnesses(suite)
    with _progress(progress) as bar:
        task = bar.add_task(f"{suite.name}: {len(todo)} cells to run, {len(summary.skipped)} done",
                            total=len(todo) * suite.episodes)
        if n_workers == 0:
            for cell in todo:
                bar.update(task, description=f"{suite.name}: {cell.slug}")
                done[cell.slug] = run_cell(suite, cell, out, lambda: bar.advance(task))
                summary.ran.append(cell)
        else:
            for res in _run_on_ray(suite, todo, out, n_workers, lambda: bar.advance(task, suite.episodes)):
                done[res.cell.slug] = res
                summary.ran.append(res.cell)
    summary.results = [done[c.slug] for c in suite.cells() if c.slug in done]
    return summary


def _run_on_ray(suite: Suite, todo: list[Cell], out: Path, n_workers: int,
                on_cell: Callable[[], None]) -> list[CellResult]:
    import ray

    from polar.rl.ray_session import init_ray

    init_ray(num_cpus=n_workers)
    remote = ray.remote(num_cpus=1, max_retries=0)(_remote_cell)
    suite_json = suite.model_dump_json()
    cwd = os.getcwd()
    pending = {remote.remote(suite_json, c.model_dump_json(), str(out.resolve()), cwd): c for c in todo}
    results: list[CellResult] = []
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            cell = pending.pop(ref)
            try:
                results.append(CellResult.model_validate_json(ray.get(ref)))
            except ray.exceptions.RayTaskError as err:
                cause = err.cause if isinstance(err.cause, PolarError) else None
                if cause is not None:
                    raise cause from None
                raise PolarError(f"cell {cell.slug} failed in a Ray worker: {err}") from None
            on_cell()
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
    return results


class _NullProgress:
    def __enter__(self) -> _NullProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def add_task(self, *a: Any, **k: Any) -> int:
        return 0

    def update(self, *a: Any, **k: Any) -> None:
        pass

    def advance(self, *a: Any, **k: Any) -> None:
        pass


def _progress(enabled: bool) -> Any:
    if not enabled:
        return _NullProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), transient=False)


def run_suite(
    suite_or_path: Suite | str | Path | dict,
    out_dir: str | Path,
    *,
    workers: int | None = None,
    progress: bool = True,
    only: Callable[[Cell], bool] | None = None,
) -> Results:
    """Run the missing cells of a suite and aggregate every finished cell into Results
    (render them with `polar.evals.report.render_report(results, out_dir)`)."""
    from polar.evals.metrics import compute_results

    suite = load_suite(suite_or_path)
    summary = run_cells(suite, out_dir, workers=workers, progress=progress, only=only)
    results = compute_results(suite, summary.results)
    return results.model_copy(update={"ran": [c.slug for c in summary.ran],
                                      "reused": [c.slug for c in summary.skipped]})
