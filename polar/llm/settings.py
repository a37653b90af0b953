"""Strict settings for a model connection (the LLM part of a planner profile)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from polar.config import StrictModel
from polar.llm.serve import ServerSettings


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
    structured_output: Literal["none", "json_object", "json_schema", "json_object_schema"] = Field(
        default="none",
        description="What the engine enforces: the decision schema as response_format in OpenAI's form "
                    "('json_schema': OpenAI, vLLM) or llama-cpp-python's ('json_object_schema'); "
                    "'json_object': JSON mode; 'none': prompt-side JSON.",
    )
    logprobs: bool = Field(default=False, description="Ask for token log-probs (recorded for training data).")
    top_logprobs: int | None = Field(default=None, ge=0, le=20,
                                     description="Alternatives per token (llama.cpp returns log-probs only when set).")
    tokenizer: Literal["none", "server"] = Field(
        default="none",
        description="'server': the llama.cpp server's /extras/tokenize endpoint gives the reply's token ids "
                    "(llama.cpp returns none; vLLM's come with the reply) and the prompt's size before each call.")
    system_message: Literal["system", "user"] = Field(
        default="system", description="'user': send the system prompt inside the first user message "
                                      "(chat formats without a system role, e.g. Gemma's).")
    warmup: Literal["none", "import", "request"] = Field(
        default="import", description="Before the first timed call: import litellm ('import'), and send one "
                                      "1-token request ('request') so that connection set-up is not timed.")
    context_tokens: int | None = Field(default=None, ge=64,
                                       description="The model's context window for the prompt-fit check; "
                                                   "default: server.n_ctx, else unchecked.")
    server: ServerSettings | None = Field(default=None, description="A local server that serves this model "
                                                                    "(started when not running, see polar serve-llm).")
    pricing: Pricing | None = None
    role: str = Field(default="planner", description="The caller's role, written into every call record.")
    frozen: bool = Field(default=False, description="Calls of a frozen helper never enter exported training data.")
    extra_params: dict[str, Any] = Field(default_factory=dict, description="Passed through to litellm.completion.")
    seed_per_call: bool = Field(default=False, description=(
        "Send each request a sampler seed of its own, drawn at random and kept in the call record's params. "
        "llama-server samples concurrent requests alike without one (4 equal prompts sent at once at "
        "temperature 1 came back as 4 equal replies), which would make a group's episodes copies."))

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`seed_per_call` appears only when set: a dumped profile (part of its cells' keys) stays
        what it was before the field existed."""
        out = handler(self)
        for name in self.at_default("seed_per_call"):
            out.pop(name, None)
        return out

    @model_validator(mode="before")
    @classmethod
    def _server_defaults(cls, data: Any) -> Any:
        # a `server:` block gives the api_base and the context window unless they are set
        if isinstance(data, dict) and isinstance(data.get("server"), dict | ServerSettings):
            server = ServerSettings.model_validate(data["server"])
            data = {"api_base": server.api_base, "context_tokens": server.n_ctx, **data}
        return data
