"""Per-episode budgets on LLM calls, tokens and dollars."""

from __future__ import annotations

from dataclasses import dataclass

from polar.errors import BudgetExceeded
from polar.llm.settings import BudgetLimits


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached_calls: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Budget:
    """Checked before every call; charged after it. `reset()` starts a new episode."""

    def __init__(self, limits: BudgetLimits | None = None) -> None:
        self.limits = limits or BudgetLimits(max_calls=None)
        self.used = Usage()

    def reset(self) -> None:
        self.used = Usage()

    def check(self) -> None:
        lim, u = self.limits, self.used
        if lim.max_calls is not None and u.calls >= lim.max_calls:
            raise BudgetExceeded(f"LLM call budget exhausted: {u.calls} calls made, budgets.max_calls={lim.max_calls}")
        if lim.max_tokens is not None and u.tokens >= lim.max_tokens:
            raise BudgetExceeded(f"LLM token budget exhausted: {u.tokens} tokens used, budgets.max_tokens={lim.max_tokens}")
        if lim.max_cost_usd is not None and u.cost_usd >= lim.max_cost_usd:
            raise BudgetExceeded(
                f"LLM dollar budget exhausted: ${u.cost_usd:.4f} spent, budgets.max_cost_usd={lim.max_cost_usd}"
            )

    def charge(self, prompt_tokens: int, completion_tokens: int, cost_usd: float, cached: bool) -> None:
        u = self.used
        u.calls += 1
        u.prompt_tokens += prompt_tokens
        u.completion_tokens += completion_tokens
        u.cost_usd += cost_usd
        u.cached_calls += int(cached)
