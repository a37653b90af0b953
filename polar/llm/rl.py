"""Policy-gradient training of a planner model from episode rewards (`polar llm rl`): GRPO.

What is optimised, top to bottom (Shao et al. 2024, DeepSeekMath's GRPO, with PPO's clip):

- A **group** is G episodes of one task from one start state (env seed), sampled from the
  served model at a temperature. Each episode's reward r (success, or return) becomes the
  group-relative advantage A = (r - mean(group)) / std(group); every decision of the episode
  shares it. A group whose rewards are all equal (all solved, all failed) says nothing about
  which behaviour is better: it is dropped, and counted.
- Each decision is a sequence the model sampled: its prompt's token ids and its completion's
  token ids **as sampled**, with the sampler's log-probs (`old`). The trainer scores exactly
  these ids: it never re-tokenises the reply text. Its tokenizer must agree with the server's
  (checked on a fixed string, and on each prompt's length): a mismatch is an error.
- Per completion token: ratio = exp(logp - old); the clipped surrogate
  min(ratio A, clip(ratio, 1-eps, 1+eps) A); minus beta times the k3 estimate of
  KL(policy || reference) on the sampled token, exp(ref - logp) - (ref - logp) - 1 (>= 0,
  exactly 0 where the policy is the reference). The loss is minus that, averaged over the
  sequence's tokens, then over the sequences of a minibatch.
- The policy is the starting model plus a LoRA adapter on the same projections and top layers
  as SFT (`polar.llm.finetune`); the reference is the same model with the adapter disabled,
  i.e. the starting model itself. The adapter accumulates over iterations; each iteration's
  served model is the start merged with it, converted to GGUF.

The sampler's log-probs are llama.cpp's, of the raw model (before temperature and the JSON
grammar), from the quantised GGUF: the ratio is between the trainer's float32 model and the
served one, about 1 at the first step of an iteration.

The one exception is opt-in (`polar llm rl`'s `explore_objective: imitate`): a decision whose
skill the exploration draw forced was not the model's sample, so it has no honest ratio. It is
trained by self-imitation, max(A, 0) times its log-likelihood (`imitation_token_loss`), on the
reply as the tokenizer writes it (`rollout_from_call`), beside the same KL penalty.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from polar.config import StrictModel
from polar.errors import PolarError
from polar.llm.finetune import PROJECTIONS

# A fixed string the trainer's and the server's tokenizers must split identically before any
# training: ASCII, JSON punctuation, digits, spaces and a multi-byte character.
TOKENIZER_PROBE = ('{"decision": {"kind": "skill", "skill": "goto", "args": {"color": "yellow", '
                   '"object": "key", "x": 12}}}  Goal: carrying(box,purple) \u2192 caf\u00e9')


class TokenizationMismatch(PolarError):
    """The server's tokenisation and the trainer's disagree: the trainer would score other
    tokens than the ones the model sampled."""

    exit_code = 2


class GRPOConfig(StrictModel):
    """The update's hyperparameters (recorded in the run's results)."""

    learning_rate: float = Field(default=1e-4, gt=0)
    clip_eps: float = Field(default=0.2, gt=0, lt=1, description="PPO clip range of the importance ratio.")
    kl_coef: float = Field(default=0.04, ge=0, description="beta: weight of the k3 KL to the reference (the starting model).")
    epochs: int = Field(default=1, ge=1, description="Passes over an iteration's sequences.")
    minibatch: int = Field(default=8, ge=1, description="Sequences per optimizer step.")
    max_grad_norm: float = Field(default=1.0, gt=0)
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_layers: int | None = Field(default=10, ge=1, description="LoRA on the top N layers, as SFT (polar-planner: 10).")
    target_modules: list[str] = Field(default_factory=lambda: list(PROJECTIONS))
    threads: int | None = Field(default=None, ge=1, description="torch CPU threads for the update.")
    seed: int = 0


# --- advantages -----------------------------------------------------------------------------------


def group_advantages(rewards: Sequence[float], eps: float = 1e-6) -> list[float] | None:
    """(r - mean) / std over one group (population std); None when the std is zero (dropped)."""
    n = len(rewards)
    if n < 2:
        return None
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / n)
    if std < eps:
        return None
    return [(r - mean) / std for r in rewards]


# --- the sequences the trainer scores ---------------------------------------------------------------


class Rollout(BaseModel):
    """One sampled decision, exactly as the sampler produced it, with its episode's advantage."""

    model_config = ConfigDict(extra="forbid")

    prompt_ids: list[int]
    completion_ids: list[int]
    sampler_logprobs: list[float]
    advantage: float
    group: str = ""
    episode_id: str = ""
    call_id: str = ""
    imitate: bool = Field(default=False, description=(
        "A drawn (forced) decision trained by self-imitation (`imitation_token_loss`): its completion is "
        "the reply as the tokenizer writes it and it holds no sampler log-probs."))


def prompt_token_ids(tok: Any, messages: list[dict[str, Any]]) -> list[int]:
    """The chat template with the assistant turn opened, as the trainer tokenises it."""
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(out["input_ids"] if not isinstance(out, list) else out)


def check_tokenizer(tok: Any, server_tokenize: Callable[[str], list[int]], text: str = TOKENIZER_PROBE) -> None:
    """Raise TokenizationMismatch unless the server splits `text` into the trainer's ids."""
    ours = list(tok(text, add_special_tokens=False)["input_ids"])
    theirs = list(server_tokenize(text))
    if ours != theirs:
        i = next((k for k, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), min(len(ours), len(theirs)))
        raise TokenizationMismatch(
            f"the server's tokenizer and the trainer's split the probe string differently: {len(theirs)} tokens "
            f"against {len(ours)}, first difference at token {i} (server {theirs[i:i + 3]}, trainer {ours[i:i + 3]}); "
            "the trainer would score other tokens than the model sampled: serve the model the trainer loads "
            "(the same tokenizer)")


def reply_ids(tok: Any, ids: list[int]) -> list[int]:
    """The ids without the special tokens that end them: llama-server's sampled ids include the
    end-of-turn token that stopped the reply (scored: stopping is the model's choice too), whose
    text the reply does not hold."""
    special = set(getattr(tok, "all_special_ids", None) or [])
    end = len(ids)
    while end and ids[end - 1] in special:
        end -= 1
    return list(ids[:end])


def sampled_text(logprobs_content: list[dict[str, Any]]) -> str:
    """The text of the sampled tokens as the server gives them: their bytes where sent (a token
    may hold part of a character), else their strings. It can be more than the reply: with a
    JSON-schema response_format llama-server may sample a code fence around the object and
    return the object alone as the message; the trainer scores every token it sampled."""
    if all(isinstance(t.get("bytes"), list) for t in logprobs_content):
        return b"".join(bytes(t["bytes"]) for t in logprobs_content).decode("utf-8", errors="replace")
    return "".join(str(t.get("token", "")) for t in logprobs_content)


def rollout_from_call(tok: Any, call: Any, advantage: float, group: str = "", episode_id: str = "",
                      imitate_forced: bool = False) -> Rollout | None:
    """A Rollout from a call record, its tokens checked against the trainer's tokenizer.

    `imitate_forced`: a call whose skill the exploration draw forced (`forced_skill` in its record)
    becomes an `imitate` rollout: the grammar forced the name one character-prefix at a time, so the
    sampler wrote it in splits the model never writes (`e`+`x`+`pl`+`ore`); its completion is the
    sampled text as the tokenizer splits it (what the model writes unforced), and its end tokens.

    None when the record holds no sampled token ids with log-probs (e.g. the reply's ids came
    from re-tokenising its text, `token_ids_source: server-tokenizer`): such a reply is not
    scored, and the caller counts it. Raises TokenizationMismatch when the sampled ids (less an
    ending special token, `reply_ids`) do not decode to the text the server sampled
    (`sampled_text`), that text does not hold the reply, or the trainer's prompt has another
    length than the server counted."""
    ids, source = call.token_ids, call.token_ids_source
    lp = (call.logprobs or {}).get("content") if isinstance(call.logprobs, dict) else None
    if not ids or source not in ("sampled", "reply") or not lp or len(lp) != len(ids):
        return None
    text = tok.decode(reply_ids(tok, ids), skip_special_tokens=False)
    sampled = sampled_text(lp)
    if text != sampled:
        raise TokenizationMismatch(f"call {call.call_id}: its sampled token ids decode to {text[:80]!r} with the "
                                   f"trainer's tokenizer, not to the text the server sampled {sampled[:80]!r}")
    if call.reply not in sampled:
        raise TokenizationMismatch(f"call {call.call_id}: the reply {call.reply[:80]!r} is not part of the text the "
                                   f"server sampled {sampled[:80]!r}: the log-probs are another reply's")
    prompt = prompt_token_ids(tok, call.messages)
    if call.prompt_tokens and len(prompt) != call.prompt_tokens:
        raise TokenizationMismatch(f"call {call.call_id}: the trainer's chat template gives a {len(prompt)}-token "
                                   f"prompt, the server counted {call.prompt_tokens}: the two would score other "
                                   "tokens (another chat template or tokenizer)")
    if imitate_forced and getattr(call, "forced_skill", None):
        body = reply_ids(tok, ids)
        written = list(tok(text, add_special_tokens=False)["input_ids"]) + list(ids[len(body):])
        return Rollout(prompt_ids=prompt, completion_ids=written, sampler_logprobs=[], advantage=advantage,
                       group=group, episode_id=episode_id, call_id=call.call_id, imitate=True)
    return Rollout(prompt_ids=prompt, completion_ids=list(ids), sampler_logprobs=[float(t["logprob"]) for t in lp],
                   advantage=advantage, group=group, episode_id=episode_id, call_id=call.call_id)


# --- the objective ----------------------------------------------------------------------------------


def sequence_logprobs(model: Any, prompt_ids: list[int], completion_ids: list[int],
                      frozen: tuple[int, Any] | None = None) -> Any:
    """Log-probs of `completion_ids` given `prompt_ids` (1-D tensor, one per completion token).
    The LM head runs only on the completion's positions (as in fine-tuning). `frozen`: (n, the
    output of the bottom n decoder layers for these ids, `frozen_hidden`): only the layers above
    run (the same numbers: the bottom layers' output does not depend on the adapter)."""
    import torch

    lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    device = next(lm.parameters()).device
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)], device=device)
    if frozen is None or frozen[0] == 0:
        hidden = lm.model(input_ids=ids, use_cache=False).last_hidden_state[0]
    else:
        with _only_layers(lm, frozen[0], None, final_norm=True):
            hidden = lm.model(inputs_embeds=frozen[1], use_cache=False).last_hidden_state[0]
    p, c = len(prompt_ids), len(completion_ids)
    logits = lm.lm_head(hidden[p - 1: p + c - 1]).float()
    return torch.log_softmax(logits, -1).gather(1, ids[0, p:, None]).squeeze(1)


def frozen_layers(model: Any) -> int:
    """How many bottom decoder layers hold no trainable parameter (LoRA on the top N layers):
    their output is the same for the policy and the reference, before and after every step."""
    lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    for i, layer in enumerate(lm.model.layers):
        if any(p.requires_grad for p in layer.parameters()):
            return i
    return len(lm.model.layers)


def frozen_hidden(model: Any, prompt_ids: list[int], completion_ids: list[int], n: int) -> Any:
    """The output of the bottom `n` decoder layers for the sequence (no gradient: nothing there trains)."""
    import torch

    lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)], device=next(lm.parameters()).device)
    with torch.no_grad(), _only_layers(lm, 0, n, final_norm=False):
        return lm.model(input_ids=ids, use_cache=False).last_hidden_state


@contextlib.contextmanager
def _only_layers(lm: Any, lo: int, hi: int | None, final_norm: bool) -> Iterator[None]:
    """The decoder runs only its layers lo:hi (and its final norm only if `final_norm`): the
    model's own forward (positions, mask, rotary embeddings) over a slice of its layers."""
    import torch

    inner = lm.model
    layers, norm = inner.layers, inner.norm
    inner.layers = torch.nn.ModuleList(list(layers)[lo:hi])
    if not final_norm:
        inner.norm = torch.nn.Identity()
    try:
        yield
    finally:
        inner.layers, inner.norm = layers, norm


def grpo_token_loss(logp: Any, old: Any, ref: Any, advantage: float, clip_eps: float,
                    kl_coef: float) -> tuple[Any, dict[str, float]]:
    """The clipped surrogate with the k3 KL penalty, averaged over one sequence's tokens."""
    import torch

    ratio = torch.exp(logp - old)
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    surrogate = torch.minimum(ratio * advantage, clipped * advantage)
    d = ref - logp
    kl = torch.exp(d) - d - 1
    loss = -(surrogate - kl_coef * kl).mean()
    with torch.no_grad():
        clip_frac = float(((ratio - clipped).abs() > 0).float().mean())
    return loss, {"kl": float(kl.detach().mean()), "clip_frac": clip_frac, "ratio": float(ratio.detach().mean())}


def imitation_token_loss(logp: Any, ref: Any, advantage: float, kl_coef: float) -> tuple[Any, dict[str, float]]:
    """Self-imitation (Oh et al. 2018, "Self-Imitation Learning") of a drawn decision: the log-likelihood
    weighted by max(advantage, 0), with the same k3 KL penalty, averaged over the sequence's tokens.

    No importance ratio: the drawn skill was not the model's sample (the behaviour was the draw), and
    the clipped ratio would let a skill the model gives e^-7 rise by at most 1 + clip_eps per iteration
    (what the first memory-mode run with the draw measured). A drawn decision that did worse than its
    group's mean is not pushed down: the model did not choose it."""
    import torch

    d = ref - logp
    kl = torch.exp(d) - d - 1
    loss = -(max(advantage, 0.0) * logp - kl_coef * kl).mean()
    return loss, {"kl": float(kl.detach().mean())}


class GRPOTrainer:
    """The policy (start model + LoRA) and its optimizer, across iterations via save/load."""

    def __init__(self, start_checkpoint: str | Path, cfg: GRPOConfig, adapter: str | Path | None = None) -> None:
        import torch
        from peft import LoraConfig, PeftModel, get_peft_model
        from transformers import AutoModelForCausalLM

        self.cfg = cfg
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        base = AutoModelForCausalLM.from_pretrained(start_checkpoint, dtype=torch.float32)
        if adapter is not None:
            self.model = PeftModel.from_pretrained(base, adapter, is_trainable=True)
        else:
            n = base.config.num_hidden_layers
            layers = list(range(max(0, n - cfg.lora_layers), n)) if cfg.lora_layers else None
            self.model = get_peft_model(base, LoraConfig(
                r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, target_modules=cfg.target_modules,
                layers_to_transform=layers, task_type="CAUSAL_LM"))
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.learning_rate, weight_decay=0.0)
        if adapter is not None and (Path(adapter) / "optimizer.pt").exists():
            self.optimizer.load_state_dict(torch.load(Path(adapter) / "optimizer.pt", weights_only=True))

    def reference_logprobs(self, rollouts: Sequence[Rollout], frozen: Sequence[Any] | None = None) -> list[Any]:
        """Log-probs of the reference (the adapter disabled: the starting model); `frozen`: each
        rollout's (n, bottom layers' output), as `sequence_logprobs` takes it."""
        import torch

        with torch.no_grad(), self.model.disable_adapter():
            return [sequence_logprobs(self.model, r.prompt_ids, r.completion_ids, frozen[i] if frozen else None)
                    for i, r in enumerate(rollouts)]

    def frozen_outputs(self, rollouts: Sequence[Rollout]) -> list[tuple[int, Any]]:
        """Each rollout's (n, output of the n bottom layers that hold no LoRA), computed once per
        distinct sequence: the reference and every policy pass start from it instead of running
        those layers again (a third of the forward work with LoRA on the top 10 of 30 layers)."""
        n = frozen_layers(self.model)
        seen: dict[tuple[int, ...], Any] = {}
        out = []
        for r in rollouts:
            key = (*r.prompt_ids, -1, *r.completion_ids)
            if key not in seen:
                seen[key] = frozen_hidden(self.model, r.prompt_ids, r.completion_ids, n) if n else None
            out.append((n, seen[key]))
        return out

    def update(self, rollouts: Sequence[Rollout], progress: bool = False, share_frozen: bool = True) -> dict[str, Any]:
        """GRPO steps over the rollouts (`epochs` passes, `minibatch` sequences per step).
        `share_frozen`: run the layers without LoRA once per sequence (`frozen_outputs`; the
        same log-probs, less work); False runs every layer in every pass (the side-by-side check)."""
        import random

        import torch

        if not rollouts:
            return {"steps": 0, "sequences": 0, "tokens": 0}
        t0 = time.perf_counter()
        self.model.train()
        frozen = self.frozen_outputs(rollouts) if share_frozen else None
        ref = self.reference_logprobs(rollouts, frozen)
        order = list(range(len(rollouts)))
        rng = random.Random(self.cfg.seed)
        stats: list[dict[str, float]] = []
        steps, tokens = 0, 0
        n_steps = self.cfg.epochs * math.ceil(len(rollouts) / self.cfg.minibatch)
        bar = _bar(progress, n_steps)
        with bar:
            task = bar.add_task("update", total=n_steps, info="")
            for _ in range(self.cfg.epochs):
                rng.shuffle(order)
                for start in range(0, len(order), self.cfg.minibatch):
                    batch = order[start: start + self.cfg.minibatch]
                    self.optimizer.zero_grad(set_to_none=True)
                    for i in batch:
                        r = rollouts[i]
                        logp = sequence_logprobs(self.model, r.prompt_ids, r.completion_ids,
                                                 frozen[i] if frozen else None)
                        if r.imitate:
                            loss, s = imitation_token_loss(logp, ref[i], r.advantage, self.cfg.kl_coef)
                        else:
                            old = torch.tensor(r.sampler_logprobs, dtype=logp.dtype)
                            loss, s = grpo_token_loss(logp, old, ref[i], r.advantage, self.cfg.clip_eps,
                                                      self.cfg.kl_coef)
                        (loss / len(batch)).backward()
                        stats.append(s | {"loss": float(loss.detach())})
                        tokens += len(r.prompt_ids) + len(r.completion_ids)
                    torch.nn.utils.clip_grad_norm_(self.params, self.cfg.max_grad_norm)
                    self.optimizer.step()
                    steps += 1
                    dt = max(time.perf_counter() - t0, 1e-9)
                    bar.update(task, advance=1, info=f"{tokens / dt:6.0f} tok/s  kl {_mean(stats, 'kl'):.4f}")
        wall = time.perf_counter() - t0
        return {"steps": steps, "sequences": len(rollouts), "tokens": tokens, "wall_s": wall,
                "tokens_per_s": tokens / max(wall, 1e-9), "loss": _mean(stats, "loss"), "kl": _mean(stats, "kl"),
                "clip_frac": _mean(stats, "clip_frac"), "ratio": _mean(stats, "ratio"),
                "frozen_layers": frozen[0][0] if frozen else 0}

    def save(self, out: str | Path) -> Path:
        """The adapter (PEFT's files) and the optimizer state, written to a fresh folder."""
        import torch

        out = Path(out)
        tmp = out.with_name(out.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        self.model.save_pretrained(tmp)
        torch.save(self.optimizer.state_dict(), tmp / "optimizer.pt")
        shutil.rmtree(out, ignore_errors=True)
        tmp.replace(out)
        return out


def _mean(rows: list[dict[str, float]], key: str) -> float:
    vals = [r[key] for r in rows if key in r]
    return sum(vals) / len(vals) if vals else float("nan")


def _bar(show: bool, total: int) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("[bold]GRPO update[/]"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[info]}"), TimeRemainingColumn(), disable=not show)


# --- the starting checkpoint and the served model ------------------------------------------------------


def start_checkpoint(ref: str, out: str | Path) -> Path:
    """A float32 checkpoint of the starting model: a shipped model's adapters merged into its base
    (as `polar.llm.adapters.materialise` does before converting), else `base_checkpoint(ref)`."""
    from polar.llm.finetune import base_checkpoint, load_tokenizer
    from polar.llm.models import read_shipped, resolve_model

    entry = resolve_model(ref)
    if not entry.source.startswith("shipped:"):
        return base_checkpoint(ref)
    out = Path(out)
    if (out / "config.json").exists():
        return out
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    folder = Path(entry.source.removeprefix("shipped:"))
    shipped = read_shipped(folder)
    base_dir = base_checkpoint(shipped.base)
    lm = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    for a in shipped.adapters:
        lm = PeftModel.from_pretrained(lm, folder / a).merge_and_unload()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    lm.save_pretrained(tmp)
    load_tokenizer(base_dir).save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return out


def merge_to_gguf(checkpoint: str | Path, adapter: str | Path, out: str | Path, gguf_type: str = "q8_0") -> Path:
    """The start checkpoint with the adapter merged, converted by llama.cpp's converter."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from polar.llm.convert import to_gguf
    from polar.llm.finetune import load_tokenizer

    out = Path(out)
    lm = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    lm = PeftModel.from_pretrained(lm, adapter).merge_and_unload()
    work = out.with_suffix(".merging")
    shutil.rmtree(work, ignore_errors=True)
    lm.save_pretrained(work)
    load_tokenizer(checkpoint).save_pretrained(work)
    try:
        to_gguf(work, out.with_suffix(".gguf.tmp"), gguf_type).replace(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def write_rollouts(path: str | Path, rollouts: Sequence[Rollout]) -> None:
    from polar.files import atomic_write

    atomic_write(path, "".join(r.model_dump_json() + "\n" for r in rollouts))


def read_rollouts(path: str | Path) -> list[Rollout]:
    p = Path(path)
    return [Rollout.model_validate(json.loads(line)) for line in p.read_text().splitlines() if line.strip()]
