"""What a memory-mode LLM planner observes (issue 41): its prompts are the memory's predicates and
its skills read the memory, so it is labelled `view` without being told, and refuses `full`."""

from __future__ import annotations

import pytest

from polar.errors import ConfigError
from polar.evals.cells import agent_information
from polar.evals.suite import PlannerAgentConfig


def _agent(planner: str, **kw) -> PlannerAgentConfig:
    return PlannerAgentConfig(name="p", kind="planner", planner=planner, skills="skills_memory", **kw)


def test_an_llm_planner_over_the_memory_observes_its_own_view() -> None:
    assert agent_information(_agent("student-memory")).observes == "view"
    assert agent_information(_agent("polar-planner-memory")).observes == "view"
    assert agent_information(_agent("student-memory", observes="view")).observes == "view"
    assert agent_information(_agent("student")).observes == "full"  # predicates mode: unchanged
    with pytest.raises(ConfigError, match="observation: memory reads the agent's own view"):
        agent_information(_agent("student-memory", observes="full"))
