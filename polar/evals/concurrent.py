"""A cell's episodes K at a time, against a model server with K parallel slots.

An LLM arm's episode is mostly waiting on decisions; llama-server (`server.engine:
llama-server`, `server.parallel: K`) decodes K requests together in one batch, so K episodes in
flight at once turn K waits into one. Each of the K lanes has its own agent (its own planner,
client and per-episode budget, prepared exactly as the cell's one agent is) and its own harness
instance; an episode depends only on its index (its seed), so which lane plays it does not
matter. Episodes come back in index order, so the caller appends and checkpoints them exactly
as a one-at-a-time run does (a killed run keeps a prefix of episodes, as before).
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from polar.episode import EpisodeRecord
from polar.evals.agents import EvalAgent
from polar.evals.cells import make_agent
from polar.evals.planner_agent import PlannerProfiles
from polar.evals.suite import Cell, Suite, SuiteHarness
from polar.harnesses.base import Harness

# plays episode i on one lane's (agent, harness): the runner's own episode body
PlayEpisode = Callable[[int, EvalAgent, Harness], EpisodeRecord]


def play_concurrently(suite: Suite, cell: Cell, entry: SuiteHarness, first: tuple[EvalAgent, Harness],
                      work_dir: Path, indices: list[int], slots: int,
                      play: PlayEpisode, profiles: PlannerProfiles | None = None,
                      ) -> Iterator[tuple[int, EpisodeRecord]]:
    """Play `indices` on `slots` lanes (the first is the caller's agent and harness); yield
    (index, record) in index order. The extra lanes are closed on the way out. `profiles`: the
    run's planner profiles, resolved once (the lanes' agents share them)."""
    lanes: queue.Queue[tuple[EvalAgent, Harness]] = queue.Queue()
    first[0].use_slot(0)  # lane j keeps to slot j: its episodes reuse their own evaluated prompts
    lanes.put(first)
    extra: list[tuple[EvalAgent, Any]] = []
    try:
        for lane in range(1, min(slots, len(indices))):
            agent = make_agent(suite.agent_for(cell), suite, profiles)
            extra.append((agent, None))  # closed on the way out, even if preparing it fails
            agent.prepare(entry, cell.seed, work_dir)  # the same preparation as the first lane's
            agent.use_slot(lane)
            harness = entry.make()
            extra[-1] = (agent, harness)
            lanes.put((agent, harness))

        def run(i: int) -> EpisodeRecord:
            lane = lanes.get()
            try:
                return play(i, *lane)
            finally:
                lanes.put(lane)

        with ThreadPoolExecutor(max_workers=lanes.qsize(), thread_name_prefix="polar-episode") as pool:
            futures: list[Future[EpisodeRecord]] = [pool.submit(run, i) for i in indices]
            try:
                for i, fut in zip(indices, futures, strict=True):
                    yield i, fut.result()
            finally:
                for fut in futures:  # an error or a closed generator: start nothing more
                    fut.cancel()
    finally:
        first[0].use_slot(None)  # the caller's agent goes on as it came
        for agent, harness in extra:
            if harness is not None:
                harness.close()
            agent.close()
