"""Token ids of a reply, prompt sizes, and compact log-probs.

llama-cpp-python's server returns per-token log-probs (with `top_logprobs` set), each with
the text of the token it sampled, but not the token's id; llama.cpp's own llama-server sends
each sampled token's `id` too (the end-of-turn token included: its text is empty), and those
are taken as they are (`logprob_ids`, `token_ids_source: sampled`). Otherwise two ways to the
ids, in order:
- `Vocabulary` (exact): each sampled token's text looked up in the model's own vocabulary,
  read from its GGUF file (`token_ids_source: sampled`);
- `ServerTokenizer` (when no log-probs came back): the reply's text tokenized by the
  server's `/extras/tokenize` endpoint, the model's canonical tokenization, which can differ
  from the sampled one (`token_ids_source: server-tokenizer`, `token_ids_match` says whether
  the count equals the number of tokens the server sampled).
`ServerTokenizer` also counts a prompt's tokens before a call (`/extras/tokenize/count`).
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
        self._native: bool | None = None  # True: llama-server's /tokenize (None: not asked yet)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(f"{self.root}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return json.loads(r.read())
        except (OSError, ValueError, urllib.error.URLError) as err:
            raise TokenizerError(f"{self.root}{path}: {err}") from None

    def _ids(self, text: str) -> list[int]:
        """llama-cpp-python's /extras/tokenize, else llama-server's /tokenize (which answers
        the other with 404); the endpoint that answered is kept."""
        if self._native is None:
            try:
                ids = list(self._post("/extras/tokenize", {"input": text})["tokens"])
                self._native = False
                return ids
            except TokenizerError as err:
                if "404" not in str(err):
                    raise
                try:
                    ids = list(self._post("/tokenize", {"content": text, "add_special": True})["tokens"])
                except (TokenizerError, KeyError, TypeError) as err2:
                    raise TokenizerError(f"{err}; {err2}") from None  # neither engine's endpoint
                self._native = True
                return ids
        if self._native:
            return list(self._post("/tokenize", {"content": text, "add_special": True})["tokens"])
        return list(self._post("/extras/tokenize", {"input": text})["tokens"])

    def tokenize(self, text: str) -> list[int]:
        """The text's token ids, without the BOS token the tokenizer may add."""
        if self._prefix is None:
            self._prefix = self._ids("")
        ids = self._ids(text)
        n = len(self._prefix)
        return ids[n:] if n and ids[:n] == self._prefix else ids

    def count(self, text: str) -> int:
        if self._native:  # llama-server has no count endpoint
            return len(self.tokenize(text))
        return int(self._post("/extras/tokenize/count", {"input": text})["count"]) - len(self._prefix or [])

    def count_messages(self, messages: list[dict[str, Any]], per_message: int = 6) -> int:
        """Prompt tokens of a chat request: each message's content plus `per_message` for the
        chat template's role markers (ChatML spends 5; the margin covers other formats)."""
        if self._prefix is None:
            self.tokenize("")
        text = "\n".join(str(m.get("content") or "") for m in messages)
        return self.count(text) + per_message * len(messages) + 3  # + the assistant header


def _gpt2_byte_chars() -> dict[int, str]:
    """GPT-2's byte-level BPE alphabet: each byte as the printable character its vocab uses."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {b: chr(b) for b in keep}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class Vocabulary:
    """A model's token strings, to map the text of sampled tokens back to their ids."""

    def __init__(self, tokens: list[str], model: str) -> None:
        self.model = model  # GGUF tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
        self.index: dict[str, int] = {}
        for i, t in enumerate(tokens):
            self.index.setdefault(t, i)
        self._bytes = _gpt2_byte_chars()

    @classmethod
    def from_gguf(cls, path: str) -> Vocabulary:
        from polar.llm.gguf import read_metadata

        meta = read_metadata(path, arrays=("tokenizer.ggml.tokens",))
        return cls(list(meta["tokenizer.ggml.tokens"]), str(meta.get("tokenizer.ggml.model", "gpt2")))

    def _id(self, piece: str) -> int | None:
        if self.model == "gpt2":
            return self.index.get("".join(self._bytes[b] for b in piece.encode("utf-8")))
        found = self.index.get(piece.replace(" ", "\u2581"))
        if found is None and len(piece.encode("utf-8")) == 1:
            found = self.index.get(f"<0x{piece.encode('utf-8')[0]:02X}>")  # SentencePiece byte fallback
        return found

    def ids(self, pieces: list[str]) -> list[int] | None:
        """The ids of these token texts, or None when one is not a vocabulary entry (e.g. a
        token holding part of a multi-byte character, whose text the server drops)."""
        out = [self._id(p) for p in pieces]
        return None if any(i is None for i in out) else [i for i in out if i is not None]


def logprob_ids(logprobs: Any) -> list[int] | None:
    """The sampled tokens' ids as the server sent them in an OpenAI-style `logprobs` object
    (llama-server: an integer `id` per entry), or None when an entry lacks one."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    ids = [t.get("id") if isinstance(t, dict) else None for t in content]
    return ids if all(isinstance(i, int) and not isinstance(i, bool) for i in ids) else None  # type: ignore[return-value]


def compact_logprobs(logprobs: Any) -> tuple[list[str], list[float]] | None:
    """(token strings, log-probs) of the sampled tokens from an OpenAI-style `logprobs` object."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    return [str(t.get("token", "")) for t in content], [float(t.get("logprob", 0.0)) for t in content]
