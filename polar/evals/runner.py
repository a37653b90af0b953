"""Run a suite: every cell (agent x harness x seed), in-process or over Ray workers, resumable.

Each finished cell is written atomically to `<out>/cells/<agent>/<harness>/seed-<s>.json`
together with a hash of everything that decides its result. A re-run loads the cells whose
hash still matches and runs only the others, so a suite killed half-way continues where it
stopped, and editing one agent re-runs that agent's cells only.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from polar.episode import EpisodeRecord
from polar.errors import ConfigError, PolarError
from polar.evals.agents import EvalAgent, new_episode_id
from polar.evals.cells import CellResult, cell_key, cell_path, load_cell, make_agent
from polar.evals.concurrent import play_concurrently
from polar.evals.metrics import EPISODE_STATS_KEY, Results, compute_results
from polar.evals.planner_agent import PlannerProfiles
from polar.evals.suite import Cell, PlannerAgentConfig, Suite, SuiteHarness, load_suite
from polar.evals.trace import TRACE_KEY, TracingHarness
from polar.files import atomic_write, pause_point
from polar.harnesses.base import Harness
from polar.llm.leases import hold
from polar.llm.serve import ServerSettings


class RunSummary(BaseModel):
    """Which cells this invocation ran and which it took from disk (what resume is tested on)."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    out_dir: str
    ran: list[Cell] = Field(default_factory=list)
    skipped: list[Cell] = Field(default_factory=list)
    results: list[CellResult] = Field(default_factory=list)


def default_task(harness: Harness, env_seed: int, entry: SuiteHarness) -> str:
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


# A cell's finished episodes, one JSON line each after a header line holding the cell's key, in
# its work folder while it runs: a run killed half-way through a cell (kill -9 included) keeps
# them, and the re-run plays only the episodes that are missing (each episode is seeded by its
# index, so the cell is the same as an uninterrupted one). Removed once the cell is written.
EPISODES_FILE = "episodes.jsonl"


def episodes_path(out_dir: Path, cell: Cell) -> Path:
    return out_dir / "work" / cell.slug / EPISODES_FILE


def finished_episodes(path: Path, key: str) -> list[EpisodeRecord]:
    """The episodes an interrupted run of a cell finished (index 0, 1, ... in order) when its
    key is this one; a line cut short by a kill ends the list."""
    try:
        lines = path.read_text().splitlines()
        if not lines or json.loads(lines[0]).get("key") != key:
            return []
    except (OSError, ValueError, AttributeError):
        return []
    out: list[EpisodeRecord] = []
    for line in lines[1:]:
        try:
            rec = EpisodeRecord.model_validate_json(line)
        except ValueError:
            break
        if rec.extra.get("index") != len(out):
            break
        out.append(rec)
    return out


def run_cell(suite: Suite, cell: Cell, out_dir: Path, on_episode: Callable[[], None] | None = None, *,
             key: str | None = None, profiles: PlannerProfiles | None = None) -> CellResult:
    """Prepare the agent for this cell and play its episodes (the caller persists the result);
    episodes an interrupted run of the same cell finished are kept, not played again. `key`:
    the cell's key as the run computed it; `profiles`: the run's planner profiles (both are
    computed here when not given)."""
    start = time.perf_counter()
    profiles = PlannerProfiles() if profiles is None else profiles
    key = key or cell_key(suite, cell, profiles=profiles)  # before running: what the result was computed from
    partial = episodes_path(out_dir, cell)
    records = finished_episodes(partial, key)
    # the kept episodes only (a cut line or another key's episodes dropped), then one line per episode
    atomic_write(partial, "".join([json.dumps({"key": key}) + "\n", *(r.model_dump_json() + "\n" for r in records)]))
    for _ in records:
        if on_episode is not None:
            on_episode()
    agent = make_agent(suite.agent_for(cell), suite, profiles)
    entry = agent.harness_entry(suite.harness(cell.harness))  # e.g. the full-observation variant
    try:
        prep = agent.prepare(entry, cell.seed, out_dir / "work" / cell.slug)
        harness = entry.make()
        marks = harness.spec.reward_marks_success

        def play(i: int, agent: EvalAgent, harness: Harness) -> EpisodeRecord:
            env_seed = suite.episode_seed(cell.seed, i)
            task = default_task(harness, env_seed, entry)
            tracer = TracingHarness(harness, suite.trace_frames) if i < suite.trace else None
            rec = agent.episode(tracer or harness, task, env_seed, entry.max_steps, new_episode_id())
            extra = {**rec.extra, "cell_seed": cell.seed, "index": i, "agent_name": agent.name}
            if stats := harness.episode_stats():  # a domain's own scores read them (Crafter)
                extra[EPISODE_STATS_KEY] = stats
            if tracer is not None:
                extra[TRACE_KEY] = tracer.trace()
            return rec.model_copy(update={"extra": extra})

        todo = list(range(len(records), suite.episodes_for(cell.agent)))
        slots = episode_slots(suite, cell, profiles) if len(todo) > 1 else 1
        played = (play_concurrently(suite, cell, entry, (agent, harness), out_dir / "work" / cell.slug, todo,
                                    slots, play, profiles)
                  if slots > 1 else ((i, play(i, agent, harness)) for i in todo))
        try:
            for i, rec in played:
                records.append(rec)
                with partial.open("a") as f:
                    f.write(records[-1].model_dump_json() + "\n")
                pause_point(f"episode-{i}")  # a test kills the run here
                if on_episode is not None:
                    on_episode()
        finally:
            played.close()  # lanes still playing finish their episode, then close
            harness.close()
    finally:
        agent.close()
    return CellResult(
        cell=cell, key=key, agent_kind=agent.kind, harness_id=entry.id, prep=prep,
        episodes=records, wall_s=time.perf_counter() - start,
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"), reward_marks_success=marks,
    )


def write_cell(out_dir: Path, result: CellResult) -> None:
    """Persist a finished cell. Only the driver calls this: a Ray worker that outlives a
    killed driver must never write a cell into --out."""
    atomic_write(cell_path(out_dir, result.cell), result.model_dump_json(indent=1))
    episodes_path(out_dir, result.cell).unlink(missing_ok=True)  # the cell holds them now


def _remote_cell(suite_json: str, cell_json: str, key: str, out_dir: str, cwd: str, driver_pid: int) -> str:
    """Ray task body: everything crosses as JSON text (no pickled live objects; the worker
    resolves the cell's planner profile once itself). The result goes back to the driver,
    which writes it; the worker exits if the driver dies."""
    import torch

    _exit_with_driver(driver_pid)
    os.chdir(cwd)  # relative paths in the suite (skills, recipes, harness specs) mean the driver's
    torch.set_num_threads(1)  # one worker per core; torch's own threads would oversubscribe
    suite = Suite.model_validate_json(suite_json)
    res = run_cell(suite, Cell.model_validate_json(cell_json), Path(out_dir), key=key)
    return res.model_dump_json()


_WATCHED: set[int] = set()


def _exit_with_driver(driver_pid: int, poll_s: float = 0.05) -> None:
    """Start (once per worker process) a thread that ends this process as soon as the driver
    is gone, so a `kill -9` of `polar compare` stops its training and episodes at once instead
    of after Ray notices, seconds later."""
    if driver_pid in _WATCHED:
        return
    _WATCHED.add(driver_pid)

    def watch() -> None:
        while True:
            try:
                os.kill(driver_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass  # alive, under another user
            time.sleep(poll_s)

    threading.Thread(target=watch, name="polar-driver-watch", daemon=True).start()


def check_harnesses(suite: Suite) -> None:
    """Create and close every harness once, so a bad harness fails before hours of training."""
    for i, entry in enumerate(suite.harnesses):
        try:
            h = entry.make()
        except PolarError as err:
            raise ConfigError(f"{suite.source}: harnesses.{i}: {err}") from None
        h.close()


def run_cells(
    suite_or_path: Suite | str | Path | dict,
    out_dir: str | Path,
    *,
    workers: int | None = None,
    progress: bool = True,
    only: Callable[[Cell], bool] | None = None,
    fresh: bool = False,
    profiles: PlannerProfiles | None = None,
    cells_at_once: int = 1,
) -> RunSummary:
    """Run every missing cell of a suite under `out_dir`; return all cell results and which
    cells ran now versus were reused from disk.

    `workers` overrides the suite's (0: in-process). `only` restricts which missing cells run
    this time (the rest stay missing), e.g. to split a suite across invocations. `fresh`
    first deletes the finished cells and training runs under `out_dir` (after the suite
    checked out), so everything runs again. The suite is resolved once, here (a path or a
    mapping is read and validated; a `Suite` is used as it is), and so is each planner
    profile (`profiles`, shared with the caller's report); both are passed down as objects.
    `cells_at_once`: in-process, this many cells play at the same time, on threads (e.g. a
    group's episodes, one agent per cell, against one server with as many slots).
    """
    from polar.evals.preflight import check_suite

    suite = load_suite(suite_or_path)
    profiles = PlannerProfiles() if profiles is None else profiles
    out = Path(out_dir)
    n_workers = suite.workers if workers is None else workers
    if n_workers < 0:
        raise ConfigError(f"--workers: must be >= 0, got {n_workers}")
    check_suite(suite, profiles)  # every reference resolves before anything runs or is written
    if fresh:
        clear_cells(out)

    summary = RunSummary(suite=suite.name, out_dir=str(out))
    todo: list[Cell] = []
    done: dict[str, CellResult] = {}
    keys: dict[str, str] = {}
    cell_keys: dict[str, str] = {}
    for cell in suite.cells():
        cell_keys[cell.slug] = key = cell_key(suite, cell, keys, profiles)
        res = load_cell(out, suite, cell, key)
        if res is not None:
            summary.skipped.append(cell)
            done[cell.slug] = res
        elif only is None or only(cell):
            todo.append(cell)
    if todo:
        check_harnesses(suite)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "suite.json", suite.model_dump_json(indent=1))
    # the planners' local servers are held while the cells run: another Polar process on the same
    # server attaches to it, and the last one out stops it if a holder started it (polar.llm.leases)
    needed = {(c.agent, c.seed) for c in todo}
    servers = [s for key, s in agent_servers(suite, profiles).items() if key in needed] if todo else []
    with hold(servers), _progress(progress) as bar:
        task = bar.add_task(f"{suite.name}: {len(todo)} cells to run, {len(summary.skipped)} done",
                            total=sum(suite.episodes_for(c.agent) for c in todo))
        if (n_workers == 0 or not todo) and cells_at_once > 1:
            _run_threaded(suite, todo, cell_keys, out, cells_at_once, profiles, done, summary,
                          lambda: bar.advance(task))
        elif n_workers == 0 or not todo:  # nothing to run: no Ray cluster to start
            for cell in todo:
                bar.update(task, description=f"{suite.name}: {cell.slug}")
                done[cell.slug] = res = run_cell(suite, cell, out, lambda: bar.advance(task),
                                                 key=cell_keys[cell.slug], profiles=profiles)
                write_cell(out, res)
                summary.ran.append(cell)
        else:
            def on_cell(res: CellResult) -> None:
                write_cell(out, res)  # as each cell arrives: a killed run keeps what finished
                done[res.cell.slug] = res
                summary.ran.append(res.cell)
                bar.advance(task, suite.episodes_for(res.cell.agent))

            _run_on_ray(suite, todo, cell_keys, out, n_workers, on_cell, profiles)
    summary.results = [done[c.slug] for c in suite.cells() if c.slug in done]
    return summary


def _run_threaded(suite: Suite, todo: list[Cell], cell_keys: dict[str, str], out: Path, at_once: int,
                  profiles: PlannerProfiles, done: dict[str, CellResult], summary: RunSummary,
                  advance: Callable[[], None]) -> None:
    """`todo` on `at_once` threads, each cell written as it finishes (a killed run keeps them)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="polar-cell") as pool:
        futures = {pool.submit(run_cell, suite, c, out, advance, key=cell_keys[c.slug], profiles=profiles): c
                   for c in todo}
        try:
            for fut in as_completed(futures):
                res = fut.result()
                write_cell(out, res)
                done[res.cell.slug] = res
                summary.ran.append(res.cell)
        finally:
            for fut in futures:  # an error: start no more cells (those running finish theirs)
                fut.cancel()


def clear_cells(out_dir: Path) -> None:
    """Delete the finished cells and the training runs of a suite's output folder."""
    import shutil

    for sub in ("cells", "work"):
        if (out_dir / sub).is_dir():
            shutil.rmtree(out_dir / sub)


def agent_servers(suite: Suite, profiles: PlannerProfiles | None = None) -> dict[tuple[str, int], ServerSettings]:
    """The local model engine each planner agent's cells use (its profile's `server:` block,
    or its seed's model), by agent and seed."""
    profiles = PlannerProfiles() if profiles is None else profiles
    servers: dict[tuple[str, int], ServerSettings] = {}
    for a in suite.agents:
        if isinstance(a, PlannerAgentConfig):
            for seed in a.seeds or suite.seeds:
                server = getattr(profiles(a.for_seed(seed)).built(), "server", None)
                if server is not None:
                    servers[a.name, seed] = server
    return servers


def episode_slots(suite: Suite, cell: Cell, profiles: PlannerProfiles | None = None) -> int:
    """How many of this cell's episodes may be in flight at once: its planner's server slots
    (`server.parallel`), else 1."""
    server = agent_servers(suite, profiles).get((cell.agent, cell.seed))
    return server.parallel if server is not None else 1


def _engine_resource(server: ServerSettings) -> str:
    return f"polar_engine_{server.host}_{server.port}"


def submit_order(suite: Suite, cells: list[Cell]) -> list[Cell]:
    """Cells in the order Ray gets them: round-robin over the training runs they share (a
    multitask run is shared by a seed's harnesses, a `train_seed` run by a harness's seeds),
    so that cells waiting on one run's lock start apart instead of side by side; cells that
    share nothing keep the suite's order."""
    def shared_run(c: Cell) -> tuple[str, ...]:
        agent = suite.agent(c.agent)
        if getattr(agent, "multitask", False):
            return c.agent, str(c.seed)
        if getattr(agent, "train_seed", None) is not None:
            return c.agent, c.harness
        return c.agent, c.harness, str(c.seed)

    groups: dict[tuple[str, ...], list[Cell]] = {}
    for c in cells:
        groups.setdefault(shared_run(c), []).append(c)
    queues = list(groups.values())
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def _run_on_ray(suite: Suite, todo: list[Cell], keys: dict[str, str], out: Path, n_workers: int,
                on_cell: Callable[[CellResult], None], profiles: PlannerProfiles | None = None) -> None:
    import ray

    from polar.rl.common.ray_session import init_ray

    # A local engine answers one request at a time, so two cells on it would only wait for each
    # other: each engine is a Ray resource of 1, and its cells run one after another while the
    # other workers run the remaining cells (training, other agents).
    servers = agent_servers(suite, profiles)
    engines = {_engine_resource(s): 1.0 for s in servers.values()}
    init_ray(num_cpus=n_workers, resources=engines)
    available = ray.cluster_resources()  # a cluster joined through RAY_ADDRESS lacks them: no limit
    remote = ray.remote(num_cpus=1, max_retries=0)(_remote_cell)
    suite_json = suite.model_dump_json()
    cwd = os.getcwd()

    def submit(c: Cell) -> Any:
        server = servers.get((c.agent, c.seed))
        engine = _engine_resource(server) if server is not None else None
        task = remote.options(resources={engine: 1.0}) if engine in available else remote
        return task.remote(suite_json, c.model_dump_json(), keys[c.slug], str(out.resolve()), cwd, os.getpid())

    pending = {submit(c): c for c in submit_order(suite, todo)}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            cell = pending.pop(ref)
            try:
                result = CellResult.model_validate_json(ray.get(ref))
            except ray.exceptions.RayTaskError as err:
                cause = err.cause if isinstance(err.cause, PolarError) else None
                if cause is not None:
                    raise cause from None
                raise PolarError(f"cell {cell.slug} failed in a Ray worker: {err}") from None
            on_cell(result)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


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
    fresh: bool = False,
) -> Results:
    """Run the missing cells of a suite and aggregate every finished cell into Results
    (render them with `polar.evals.report.render_report(results, out_dir)`)."""
    suite = load_suite(suite_or_path)
    profiles = PlannerProfiles()  # each planner profile read once: for the cells and for the report
    summary = run_cells(suite, out_dir, workers=workers, progress=progress, only=only, fresh=fresh,
                        profiles=profiles)
    results = compute_results(suite, summary.results, profiles)
    return results.model_copy(update={"ran": [c.slug for c in summary.ran],
                                      "reused": [c.slug for c in summary.skipped]})
