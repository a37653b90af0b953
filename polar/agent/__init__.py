"""The agent: decide -> execute -> judge -> replan, until the episode ends.

    from polar.agent import Agent, AgentSettings
    record = Agent(planner, library, AgentSettings(max_decisions=20)).run(task, harness, seed=0)

`loop` holds the loop, `events` what it reports as it runs (one dataclass per event), `executors` one executor per decision kind, `context` what the planner
is shown, `recording` the harness wrapper every action goes through, `noop` the opt-in
no-op guard (a call that succeeds in 0 steps and changes nothing is told as one) (`polar task` and
`polar demo` live in `polar.commands.task`).
"""

from polar.agent.events import (
    AgentEvent,
    DecisionFailed,
    DecisionMade,
    EpisodeEnded,
    EpisodeStarted,
    Event,
    ExecutionFinished,
)
from polar.agent.loop import Agent, AgentSettings, run_episode
from polar.agent.recording import RecordingHarness

__all__ = ["Agent", "AgentEvent", "AgentSettings", "DecisionFailed", "DecisionMade", "EpisodeEnded", "EpisodeStarted",
           "Event", "ExecutionFinished", "RecordingHarness", "run_episode"]
