"""Prompts that fit small models: observation modes and the context-window rule.

Observation modes (a profile's `observation:`), applied to the template variables:
- `full` (default): everything the harness offers — its text view, the symbolic predicates
  and the goal;
- `predicates`: the symbolic state only (what the symbolic planner reads): `observation`
  becomes a one-line rendering of the objects and the agent, with the predicates and the goal;
- `view`: the harness's partial text view only (comparable with BALROG-style agents): no
  predicates, no goal, no object list;
- `memory`: what the agent has seen (docs/memory.md): the agent loop reads the harness through
  its memory, so the text view is the remembered map and the predicates are the memory's
  (seen objects, their last seen state, the unexplored frontier), shown as in `full`.

The context-window rule (`fit_prompt`): the prompt shows the `history_window` most recent
outcomes; while the rendered prompt plus the reply's `max_tokens` exceeds the model's
context window, the oldest shown outcome is dropped, down to none. A prompt that still does
not fit raises `PromptTooLong`, naming the sizes and what to change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from polar.errors import PlannerError
from polar.harnesses.base import SymbolicState

ObservationMode = Literal["full", "predicates", "view", "memory"]
Messages = list[dict[str, Any]]


class PromptTooLong(PlannerError):
    """The prompt cannot fit the model's context window even without history."""


def symbolic_text(state: SymbolicState) -> str:
    """The symbolic state in one line: `agent at (1,2) facing east, carrying nothing; key(yellow)
    at (2,4); door(yellow, locked) at (4,3); goal at (6,6)` (a grid world), `agent in cell (4,6);
    goal at (6,2)` (a maze: the agent has a cell, no direction and carries nothing)."""
    a = state.agent
    parts = []
    if a:
        pos, cell = a.get("pos"), a.get("cell")
        where = f" at ({pos[0]},{pos[1]})" if pos else f" in cell ({cell[0]},{cell[1]})" if cell else ""
        facing = f" facing {a['dir']}" if "dir" in a else ""
        text = f"agent{where}{facing}"
        if "carrying" in a:
            carried = a["carrying"]
            what = f"{carried['color']} {carried['type']}" if isinstance(carried, dict) else "nothing"
            text += f", carrying {what}" if where or facing else f" carrying {what}"
        parts.append(text)
    for o in state.objects:
        attrs = ", ".join(v for v in (o.color, o.state) if v)
        where = f" at ({o.pos[0]},{o.pos[1]})" if o.pos else ""
        parts.append(f"{o.type}({attrs}){where}" if attrs else f"{o.type}{where}")
    return "; ".join(parts)


def apply_observation_mode(variables: dict[str, Any], state: SymbolicState | None,
                           mode: ObservationMode) -> dict[str, Any]:
    """The template variables as the observation mode allows them to be seen."""
    if mode == "predicates":
        if state is None:
            raise PlannerError("observation: predicates needs a harness with a symbolic state; "
                               "use observation: view")
        return {**variables, "observation": symbolic_text(state), "observation_mode": mode}
    if mode == "view":
        return {**variables, "predicates": [], "goal": [], "observation_mode": mode}
    return {**variables, "observation_mode": mode}


@dataclass
class FittedPrompt:
    messages: Messages
    tokens: int | None  # the counted prompt tokens (None: no counter, nothing checked)
    history_shown: int
    history_dropped: int  # outcomes dropped to fit, beyond those the window hides

    def as_record(self, context_tokens: int | None) -> dict[str, Any]:
        return {"tokens": self.tokens, "context_tokens": context_tokens,
                "history_shown": self.history_shown, "history_dropped": self.history_dropped}


def fit_prompt(render: Callable[[int], Messages], history_len: int, window: int,
               count: Callable[[Messages], int] | None, context_tokens: int | None,
               reply_tokens: int, template: str) -> FittedPrompt:
    """Render with as much of the recent history as fits (see the module docstring)."""
    shown = min(window, history_len)
    messages = render(shown)
    if count is None or context_tokens is None:
        return FittedPrompt(messages, None, shown, 0)
    budget = context_tokens - reply_tokens
    for k in range(shown, -1, -1):
        if k != shown:
            messages = render(k)
        n = count(messages)
        if n <= budget:
            return FittedPrompt(messages, n, k, shown - k)
    raise PromptTooLong(
        f"the prompt (template {template}) needs {n} tokens even with no history, but the model's "
        f"context window is {context_tokens} tokens of which max_tokens={reply_tokens} are kept for the "
        f"reply ({budget} left for the prompt): use the compact templates (templates: {{system: "
        f"compact_system, user: compact_skill}}), observation: predicates, fewer skills, a smaller "
        f"max_tokens, or a larger context (server.n_ctx / context_tokens)")
