"""Strict settings for a model connection (the LLM part of a planner profile)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from polar.config import StrictModel


class RetrySettings(StrictModel):
    """Bounded retries on 429 (Retry-After honoured), 5xx, connection errors and timeouts."""

    max_attempts: int = Field(default=4, ge=1, le=20, description="Attempts per call, first included.")
    initial_wait_s: float = Field(default=0.5, ge=0)
    max_wait_s: float = Field(default=30.0, ge=0, description="Cap on any single wait, Retry-After included.")
    jitter_s: float = Field(default=0.25, ge=0)


class Pricing(StrictModel):
    """Dollar prices when litellm's cost map does not know the model (local or new models)."""

    prompt_usd_per_mtok: float = Field(ge=0)
    completion_usd_per_mtok: float = Field(ge=0)


class BudgetLimits(StrictModel):
    """Per-episode limits; None means unlimited. Cache hits are charged like live calls so
    that a replayed episode ends exactly where the original did."""

    max_calls: int | None = Field(default=40, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)


class LLMSettings(StrictModel):
    """How to reach one model and what to ask of it."""

    model: str = Field(description="A litellm model string, e.g. 'openai/gpt-4o-mini' or 'hosted_vllm/Qwen/Qwen2.5-7B-Instruct'.")
    api_base: str | None = Field(default=None, description="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.")
    api_key_env: str | None = Field(default=None, description="Environment variable holding the API key.")
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=1)
    timeout_s: float = Field(default=60.0, gt=0, description="Per-attempt request timeout.")
    retries: RetrySettings = RetrySettings()
    structured_output: Literal["none", "json_object", "json_schema"] = Field(
        default="none",
        description="What the provider enforces: 'json_schema' sends the decision schema as response_format.",
    )
    logprobs: bool = Field(default=False, description="Ask for token log-probs (recorded for training data).")
    pricing: Pricing | None = None
    role: str = Field(default="planner", description="The caller's role, written into every call record.")
    frozen: bool = Field(default=False, description="Calls of a frozen helper never enter exported training data.")
    extra_params: dict[str, Any] = Field(default_factory=dict, description="Passed through to litellm.completion.")
