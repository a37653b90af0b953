"""The JSONL record of every model call: exact request and reply, tokens, cost, latency,
template name and hash, episode id, the caller's role, and log-probs / token ids when the
backend returns them. `polar llm export` turns it into fine-tuning data."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CallRecord(BaseModel):
    """One line of the call record."""

    model_config = ConfigDict(extra="allow")

    call_id: str
    time: float
    episode_id: str = ""
    role: str = "planner"
    frozen: bool = False
    model: str
    api_base: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    messages: list[dict[str, Any]]
    reply: str
    valid: bool | None = None  # whether the reply passed the caller's validation
    error: str | None = None  # the validation error when it did not
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    cache_key: str | None = None
    template: str | None = None
    template_hash: str | None = None
    finish_reason: str | None = None
    logprobs: Any = None
    token_ids: list[int] | None = None
    token_ids_source: str | None = None  # "reply" (sent by the server), "sampled", "server-tokenizer"
    token_ids_match: bool | None = None  # server-tokenizer ids: their count equals the sampled count


# One lock per file, not per recorder: the lanes of a concurrent eval (and the cells a planner-RL
# iteration samples at once) each have their own client and recorder on the same file, and a
# line longer than the write buffer goes out in several writes that would interleave.
_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _file_lock(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(path.absolute(), threading.Lock())


class CallRecorder:
    """Appends one JSON line per call. Thread-safe, also across recorders of one file in a
    process; each line is written in one call."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = _file_lock(self.path)

    def write(self, record: CallRecord) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(line)


def read_records(path: str | Path) -> list[CallRecord]:
    from polar.errors import ConfigError

    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: call record not found")
    out = []
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(CallRecord.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValueError) as err:
            raise ConfigError(f"{p}: line {n}: not a call record: {str(err).splitlines()[0]}") from None
    return out
