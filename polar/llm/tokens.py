"""Token ids and counts from an OpenAI-compatible server's tokenizer, and compact log-probs.

llama-cpp-python's server returns per-token log-probs (with `top_logprobs` set) but not the
ids of the tokens it sampled; it does expose its own tokenizer at `/extras/tokenize` (and
`/extras/tokenize/count`). `ServerTokenizer` calls those: the reply's ids are its text
tokenized by the model's own tokenizer, checked against the server's count of sampled
tokens (`token_ids_match` in the record), and prompt sizes are counted before a call.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from polar.errors import PolarError


class TokenizerError(PolarError):
    """The server's tokenizer endpoint did not answer as expected."""


def server_root(api_base: str) -> str:
    base = api_base.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


class ServerTokenizer:
    """The tokenizer of the model a llama.cpp server serves, over HTTP."""

    def __init__(self, api_base: str, timeout_s: float = 10.0) -> None:
        self.root = server_root(api_base)
        self.timeout_s = timeout_s
        self._prefix: list[int] | None = None  # what tokenizing "" gives (a BOS token, or nothing)

    def _post(self, path: str, text: str) -> dict[str, Any]:
        req = urllib.request.Request(f"{self.root}{path}", data=json.dumps({"input": text}).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return json.loads(r.read())
        except (OSError, ValueError, urllib.error.URLError) as err:
            raise TokenizerError(f"{self.root}{path}: {err}") from None

    def tokenize(self, text: str) -> list[int]:
        """The text's token ids, without the BOS token the tokenizer may add."""
        if self._prefix is None:
            self._prefix = list(self._post("/extras/tokenize", "")["tokens"])
        ids = list(self._post("/extras/tokenize", text)["tokens"])
        n = len(self._prefix)
        return ids[n:] if n and ids[:n] == self._prefix else ids

    def count(self, text: str) -> int:
        return int(self._post("/extras/tokenize/count", text)["count"]) - len(self._prefix or [])

    def count_messages(self, messages: list[dict[str, Any]], per_message: int = 6) -> int:
        """Prompt tokens of a chat request: each message's content plus `per_message` for the
        chat template's role markers (ChatML spends 5; the margin covers other formats)."""
        if self._prefix is None:
            self.tokenize("")
        text = "\n".join(str(m.get("content") or "") for m in messages)
        return self.count(text) + per_message * len(messages) + 3  # + the assistant header


def compact_logprobs(logprobs: Any) -> tuple[list[str], list[float]] | None:
    """(token strings, log-probs) of the sampled tokens from an OpenAI-style `logprobs` object."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    return [str(t.get("token", "")) for t in content], [float(t.get("logprob", 0.0)) for t in content]
