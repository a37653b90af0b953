"""LLMClient: the one module that talks to models.

Every provider goes through litellm (vLLM through its OpenAI-compatible server as
`hosted_vllm/<model>` + `api_base`). Around each call: the per-episode budget check, the
replay cache, bounded retries (tenacity) on 429 / 5xx / connection errors / timeouts with
Retry-After honoured, and one line in the JSONL call record.
"""

from __future__ import annotations

import email.utils
import functools
import os
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from polar.episode import LLMCallRecord
from polar.errors import ConfigError, LLMError, PolarError
from polar.llm.budget import Budget
from polar.llm.cache import ReplayCache, cache_key
from polar.llm.record import CallRecord, CallRecorder
from polar.llm.settings import LLMSettings
from polar.llm.tokens import (
    ServerTokenizer,
    TokenizerError,
    Vocabulary,
    compact_logprobs,
    logprob_ids,
)

_litellm: Any = None


def litellm_module() -> Any:
    """Import litellm once, on first use (its import costs seconds)."""
    global _litellm
    if _litellm is None:
        # Without this litellm fetches its cost map from the internet at import time.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True  # its "Give Feedback" banners are noise in a CLI
        litellm.drop_params = True  # providers that lack e.g. logprobs get the call without it
        _litellm = litellm
    return _litellm


class LLMCallError(LLMError):
    """A model call failed for good (after retries, or on a non-retriable error). `call` is
    the episode's record of the failed call (its attempts with status and latency), when the
    failure happened inside `LLMClient.complete`; `failed_attempts` each attempt's status,
    error and latency."""

    def __init__(self, message: str, failed_attempts: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.failed_attempts = list(failed_attempts or [])
        self.call: LLMCallRecord | None = None


@dataclass
class LLMResponse:
    content: str
    call: LLMCallRecord  # what the episode record keeps
    record: CallRecord  # the full line written to the call record
    parsed: Any = None  # what `check` returned, when the reply passed it
    error: str | None = None  # why `check` rejected the reply

    @property
    def valid(self) -> bool:
        return self.error is None


@dataclass
class _Attempts:
    n: int = 0
    errors: list[str] = field(default_factory=list)
    # one entry per failed attempt: {"attempt", "status", "error", "latency_s"}
    failed: list[dict[str, Any]] = field(default_factory=list)


def _is_transient(err: BaseException) -> bool:
    litellm = litellm_module()
    if isinstance(err, (litellm.Timeout, litellm.APIConnectionError, litellm.RateLimitError,
                        litellm.InternalServerError, litellm.ServiceUnavailableError)):
        return True
    status = getattr(err, "status_code", None)
    # 5xx, or a 200 whose body did not parse (a broken proxy, a cut connection)
    return isinstance(err, litellm.APIError) and (status is None or status == 200 or status >= 500)


def _retry_after(err: BaseException) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), when present."""
    headers = getattr(err, "litellm_response_headers", None)
    if headers is None:
        resp = getattr(err, "response", None)
        headers = getattr(resp, "headers", None)
    if not headers:
        return None
    value = None
    for k, v in dict(headers).items():
        if k.lower() == "retry-after":
            value = str(v).strip()
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _status(err: BaseException) -> int | str | None:
    """The HTTP status of a failed attempt, or what stood in for one (a timeout, a refused
    connection: no status came back)."""
    litellm = litellm_module()
    chain: list[BaseException] = []
    e: BaseException | None = err
    while e is not None and len(chain) < 10:  # litellm reports a refused connection as a 500
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any(isinstance(x, (litellm.Timeout, TimeoutError)) or "Timeout" in type(x).__name__ for x in chain):
        return "timeout"
    if any(isinstance(x, (ConnectionError, litellm.APIConnectionError)) or type(x).__name__ == "ConnectError"
           for x in chain):
        return "connection-error"
    status = getattr(err, "status_code", None)
    return status if isinstance(status, int) else None


def _describe(err: BaseException) -> str:
    text = str(err).replace("\n", " ")
    return f"{type(err).__name__}: {text[:300]}"


class LLMClient:
    """Calls one model with the settings of a profile. Not tied to planners: any caller may
    use it, tagging its records with its own role."""

    def __init__(self, settings: LLMSettings, *, cache: ReplayCache | None = None,
                 recorder: CallRecorder | None = None, budget: Budget | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.cache = cache
        self.recorder = recorder
        self.budget = budget or Budget()
        self._sleep = sleep
        self._api_key = self._resolve_api_key()
        s = settings
        # A tokenize request waits behind the completions other workers sent to the same
        # server: it gets the same patience as a call.
        self.tokenizer = (ServerTokenizer(s.api_base, timeout_s=s.timeout_s)
                          if s.tokenizer == "server" and s.api_base else None)
        self.warmup_s: float | None = None  # seconds the warm-up took (None: not warmed up yet)
        # llama-server's slot this client's requests go to (`id_slot`; None: the server picks):
        # one lane of K episodes in flight keeps to its own slot, so its episode's consecutive
        # prompts reuse that slot's evaluated prefix. Not a parameter of the call: replies are
        # cached and recorded the same whichever slot decoded them.
        self.slot: int | None = None
        self._vocab: Vocabulary | bool | None = None  # False: the served model has no GGUF vocabulary

    @functools.cached_property
    def cache_model(self) -> str:
        """The model as the reply cache knows it: the litellm name, plus, for a local
        server's model, what identifies its weights, so that a model retrained under the same
        name is asked again, not answered from the previous weights' replies."""
        s = self.settings
        if s.server is None:
            return s.model
        from polar.llm.models import resolve_model, weights_identity

        try:
            return f"{s.model}|{weights_identity(resolve_model(s.server.model))}"
        except (PolarError, OSError):  # the server cannot start either: its error says why
            return s.model

    def _resolve_api_key(self) -> str | None:
        s = self.settings
        if s.api_key_env:
            key = os.environ.get(s.api_key_env)
            if not key:
                raise ConfigError(f"api_key_env: environment variable {s.api_key_env} is not set")
            return key
        # A local OpenAI-compatible server (vLLM, the test server) needs no key, but the
        # OpenAI SDK refuses to start without one.
        return "not-needed" if s.api_base else None

    def params(self, response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        """The request parameters that shape the reply (and so belong in the cache key)."""
        s = self.settings
        p: dict[str, Any] = {"temperature": s.temperature, "max_tokens": s.max_tokens}
        if response_format is not None:
            p["response_format"] = response_format
        if s.logprobs:
            p["logprobs"] = True
            if s.top_logprobs is not None:
                p["top_logprobs"] = s.top_logprobs
        p.update(s.extra_params)
        return p

    def prepare_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages as sent: with `system_message: user` the system prompt opens the first
        user message (for chat formats that drop system messages)."""
        if self.settings.system_message == "system" or not messages or messages[0].get("role") != "system":
            return messages
        system, rest = messages[0], list(messages[1:])
        if rest and rest[0].get("role") == "user":
            rest[0] = {**rest[0], "content": f"{system['content']}\n\n{rest[0]['content']}"}
            return rest
        return [{"role": "user", "content": system["content"]}, *rest]

    def count_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        """The prompt's size in tokens before a call (None without a server tokenizer)."""
        if self.tokenizer is None:
            return None
        try:
            return self.tokenizer.count_messages(self.prepare_messages(messages))
        except TokenizerError as err:
            raise LLMCallError(f"counting the prompt's tokens failed: {err}") from None

    def ensure_server(self, announce: Callable[[str], None] | None = None) -> dict[str, Any] | None:
        """Start the profile's local server when it is not running (see polar.llm.serve)."""
        if self.settings.server is None:
            return None
        from polar.llm.serve import ensure_server

        return ensure_server(self.settings.server, *([announce] if announce else []))

    def warm_up(self) -> float:
        """Import litellm and (warmup: request) send one 1-token request, so that the first
        timed call measures the model, not set-up. Not recorded, cached or charged. Once."""
        if self.warmup_s is not None:
            return self.warmup_s
        t0 = time.perf_counter()
        s = self.settings
        if s.warmup != "none":
            litellm = litellm_module()
            if s.warmup == "request":
                try:
                    litellm.completion(model=s.model, messages=[{"role": "user", "content": "ok"}],
                                       api_base=s.api_base, api_key=self._api_key, timeout=s.timeout_s,
                                       max_tokens=1, temperature=0.0, max_retries=0, num_retries=0)
                except Exception as err:
                    raise self._failure(err, _Attempts(n=1)) from None
        self.warmup_s = time.perf_counter() - t0
        return self.warmup_s

    def cache_key_for(self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None = None) -> str:
        """The replay cache's key of this request (what `complete` looks up)."""
        return cache_key(self.cache_model, self.prepare_messages(messages), self.params(response_format))

    def complete(self, messages: list[dict[str, Any]], *, response_format: dict[str, Any] | None = None,
                 check: Callable[[str], Any] | None = None, template: str | None = None,
                 template_hash: str | None = None, episode_id: str = "",
                 record_extra: dict[str, Any] | None = None, replay: bool = True) -> LLMResponse:
        """One model call (or cache hit). `check(content)` validates the reply; its error is
        returned in the response and written to the record, never raised. `record_extra`
        adds fields to both records (e.g. the prompt-fit figures). `replay=False` asks the
        model even when the cache holds a reply (which the live one then replaces)."""
        self.budget.check()
        s = self.settings
        messages = self.prepare_messages(messages)
        params = self.params(response_format)
        if s.seed_per_call:  # recorded with the call's params (and so in its cache key)
            params["seed"] = random.SystemRandom().randrange(2**31)
        key = cache_key(self.cache_model, messages, params)
        call_id = uuid.uuid4().hex[:16]
        t0 = time.perf_counter()
        hit = self.cache.get(key) if self.cache is not None and replay else None
        failed: list[dict[str, Any]] = []
        if hit is not None:
            entry, attempts = hit, 0
        else:
            try:
                entry, attempts, failed = self._call_with_retries(messages, params)
            except LLMCallError as err:
                self._record_failure(err, messages, params, key, call_id, t0, template, template_hash, episode_id)
                raise
        latency = time.perf_counter() - t0  # for a cache hit: the lookup, which is the real cost
        if hit is None:
            if entry.get("token_ids") is None and (self.tokenizer is not None or entry.get("logprobs")):
                self._add_token_ids(entry)
            if self.cache is not None:
                self.cache.put(key, entry)
        content = entry["content"]
        parsed, error = None, None
        if check is not None:
            try:
                parsed = check(content)
            except ValueError as err:
                error = str(err)
        self.budget.charge(entry["prompt_tokens"], entry["completion_tokens"], entry["cost_usd"], hit is not None)
        record = CallRecord(
            call_id=call_id, time=time.time(), episode_id=episode_id, role=s.role, frozen=s.frozen,
            model=s.model, api_base=s.api_base, params=params, messages=messages, reply=content,
            valid=None if check is None else error is None, error=error,
            prompt_tokens=entry["prompt_tokens"], completion_tokens=entry["completion_tokens"],
            cost_usd=entry["cost_usd"], cost_known=entry.get("cost_known", True),
            latency_s=latency,
            attempts=attempts, cached=hit is not None, cache_key=key, template=template,
            template_hash=template_hash, finish_reason=entry.get("finish_reason"),
            logprobs=entry.get("logprobs"), token_ids=entry.get("token_ids"),
            token_ids_source=entry.get("token_ids_source"), token_ids_match=entry.get("token_ids_match"),
            **({"failed_attempts": failed} if failed else {}), **(record_extra or {}),
        )
        if self.recorder is not None:
            self.recorder.write(record)
        # the episode keeps the sampled tokens compactly: ids, strings and their log-probs
        sampled = compact_logprobs(entry.get("logprobs"))
        tokens = {k: entry.get(k) for k in ("token_ids", "token_ids_source", "token_ids_match")}
        if sampled is not None:
            tokens |= {"tokens": sampled[0], "token_logprobs": sampled[1]}
        call = LLMCallRecord(
            model=s.model, prompt_tokens=record.prompt_tokens, completion_tokens=record.completion_tokens,
            cost_usd=record.cost_usd, latency_s=latency, cached=record.cached, template=template,
            template_hash=template_hash, call_id=call_id,
            **{k: v for k, v in tokens.items() if v is not None}, **(record_extra or {}),
            **({"attempts": attempts, "failed_attempts": failed} if failed else {}),
        )
        return LLMResponse(content=content, call=call, record=record, parsed=parsed, error=error)

    def _vocabulary(self) -> Vocabulary | None:
        """The served model's vocabulary (from its GGUF), when the profile names a local server."""
        if self._vocab is None and self.settings.server is not None:
            from polar.llm.models import resolve_model, weights_path

            entry = resolve_model(self.settings.server.model)
            self._vocab = Vocabulary.from_gguf(str(weights_path(entry))) if entry.format == "gguf" else False
        return self._vocab or None

    def _add_token_ids(self, entry: dict[str, Any]) -> None:
        """The reply's token ids (see polar.llm.tokens): the sampled tokens' own ids when the
        log-probs carry them (llama-server) or name them and the vocabulary is known, else the server's tokenization of the
        text. `token_ids_match`: their count equals the number of tokens the server sampled."""
        sampled = compact_logprobs(entry.get("logprobs"))
        ids = logprob_ids(entry.get("logprobs"))  # llama-server names each sampled token's id
        if ids is None:
            vocab = self._vocabulary() if sampled is not None else None
            ids = vocab.ids(sampled[0]) if vocab is not None and sampled is not None \
                and "".join(sampled[0]) == entry["content"] else None
        source = "sampled"
        if ids is None:
            if self.tokenizer is None:
                return
            try:
                ids = self.tokenizer.tokenize(entry["content"])
            except TokenizerError as err:
                raise LLMCallError(f"tokenizing the reply failed: {err}") from None
            source = "server-tokenizer"
        entry["token_ids"] = ids
        entry["token_ids_source"] = source
        entry["token_ids_match"] = len(ids) == entry["completion_tokens"]

    def _record_failure(self, err: LLMCallError, messages: list[dict[str, Any]], params: dict[str, Any],
                        key: str, call_id: str, t0: float, template: str | None, template_hash: str | None,
                        episode_id: str) -> None:
        """A call that failed for good still lands in the call record and, through
        `err.call`, in the episode: each attempt's status, error and latency."""
        s = self.settings
        latency = time.perf_counter() - t0
        failed = err.failed_attempts
        record = CallRecord(
            call_id=call_id, time=time.time(), episode_id=episode_id, role=s.role, frozen=s.frozen,
            model=s.model, api_base=s.api_base, params=params, messages=messages, reply="",
            valid=False, error=str(err), latency_s=latency, attempts=len(failed), cache_key=key,
            template=template, template_hash=template_hash, failed_attempts=failed,
        )
        if self.recorder is not None:
            self.recorder.write(record)
        err.call = LLMCallRecord(model=s.model, latency_s=latency, template=template, template_hash=template_hash,
                                 call_id=call_id, error=str(err), attempts=len(failed), failed_attempts=failed)

    # -- the live call ----------------------------------------------------------------
    def _call_with_retries(self, messages: list[dict[str, Any]],
                           params: dict[str, Any]) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        litellm = litellm_module()
        r = self.settings.retries

        def wait(state: RetryCallState) -> float:
            err = state.outcome.exception() if state.outcome else None
            after = _retry_after(err) if err is not None else None
            if after is not None:
                return min(after, r.max_wait_s)
            # Exponential backoff with jitter, so that many runs hitting one server spread out.
            backoff = r.initial_wait_s * 2 ** (state.attempt_number - 1)
            return min(backoff + random.uniform(0, r.jitter_s), r.max_wait_s)

        attempts = _Attempts()
        p = self.settings.pricing
        # Known prices let litellm's own cost step skip its (slow, failing) cost-map search.
        pricing = {} if p is None else {"input_cost_per_token": p.prompt_usd_per_mtok / 1e6,
                                        "output_cost_per_token": p.completion_usd_per_mtok / 1e6}

        def once() -> Any:
            attempts.n += 1
            a0 = time.perf_counter()
            try:
                return litellm.completion(
                    model=self.settings.model, messages=messages, api_base=self.settings.api_base,
                    api_key=self._api_key, timeout=self.settings.timeout_s,
                    max_retries=0, num_retries=0,  # tenacity owns retries; no hidden ones below
                    **pricing, **{**params, **self._slot_body(params)},
                )
            except Exception as err:
                attempts.errors.append(_describe(err))
                attempts.failed.append({"attempt": attempts.n, "status": _status(err), "error": _describe(err),
                                        "latency_s": round(time.perf_counter() - a0, 4)})
                raise

        retrying = Retrying(stop=stop_after_attempt(r.max_attempts), wait=wait,
                            retry=retry_if_exception(_is_transient), reraise=True, sleep=self._sleep)
        try:
            resp = retrying(once)
        except Exception as err:
            raise self._failure(err, attempts) from None
        return self._entry(resp), attempts.n, attempts.failed

    def _slot_body(self, params: dict[str, Any]) -> dict[str, Any]:
        """litellm's `extra_body` with llama-server's `id_slot` when this client keeps to a slot."""
        if self.slot is None:
            return {}
        return {"extra_body": {**params.get("extra_body", {}), "id_slot": self.slot}}

    def _failure(self, err: BaseException, attempts: _Attempts) -> LLMCallError:
        s = self.settings
        where = f"{s.model}" + (f" at {s.api_base}" if s.api_base else "")
        statuses = {a["status"] for a in attempts.failed}
        if isinstance(err, litellm_module().Timeout) or statuses == {"timeout"}:
            cause = f"timed out (timeout_s={s.timeout_s:g} per attempt)"
        elif statuses == {"connection-error"}:
            cause = f"could not connect (refused or unreachable): {_describe(err)}"
        elif _is_transient(err):
            cause = f"kept failing: {_describe(err)}"
        else:
            cause = f"was refused (not retried): {_describe(err)}"
        message = f"model call to {where} {cause}; {attempts.n} attempt(s) made"
        if s.server is not None:
            from polar.llm.serve import death_note

            note = death_note(s.server.host, s.server.port)
            message += f"\n{note}" if note else ""
        return LLMCallError(message, attempts.failed)

    def _entry(self, resp: Any) -> dict[str, Any]:
        """The parts of a litellm response we keep: the cache entry and the record's source."""
        choice = resp.choices[0]
        usage = getattr(resp, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        cost, known = self._cost(resp, prompt, completion)
        logprobs = getattr(choice, "logprobs", None)
        if logprobs is not None and hasattr(logprobs, "model_dump"):
            logprobs = logprobs.model_dump()
        token_ids = getattr(choice, "token_ids", None)
        return {
            "content": choice.message.content or "",
            "prompt_tokens": prompt, "completion_tokens": completion,
            "cost_usd": cost, "cost_known": known,
            "finish_reason": getattr(choice, "finish_reason", None),
            "logprobs": logprobs, "token_ids": list(token_ids) if token_ids else None,
            "token_ids_source": "reply" if token_ids else None,
        }

    def _cost(self, resp: Any, prompt: int, completion: int) -> tuple[float, bool]:
        p = self.settings.pricing
        if p is not None:
            return (prompt * p.prompt_usd_per_mtok + completion * p.completion_usd_per_mtok) / 1e6, True
        # litellm priced the response already (from its cost map); None when it has no price
        # for the model (local / self-hosted): recorded as cost_known=False, not as free.
        cost = (getattr(resp, "_hidden_params", None) or {}).get("response_cost")
        return (float(cost), True) if cost is not None else (0.0, False)
