"""Fine-tune a planner model on a planner dataset (`polar llm finetune`).

TRL's `SFTTrainer` with a PEFT LoRA adapter on the attention and MLP projections (or full
fine-tuning), the loss on the completion (the decision) only, sequences packed best-fit into
`max_length` windows (padding-free: packed examples do not attend to each other). CPU by
default, a GPU when present. Checkpoints every `save_steps`; `resume` continues from the last.

Afterwards the adapter is kept (for `polar llm ship`) and merged, the merged checkpoint is scored on the validation split
(loss, and exact match: every target token is the model's greedy choice given the prompt and
the target so far, which is exactly "greedy decoding reproduces the target"), converted to
GGUF with llama.cpp's own converter, and registered in the model registry with its
provenance: base model, dataset hash, steps, tokens, wall time, eval.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from polar.config import StrictModel
from polar.devices import resolve_device
from polar.errors import ConfigError
from polar.files import pause_point
from polar.llm.dataset import Example, read_info, read_split
from polar.llm.models import ModelEntry, ModelRegistry, cache_dir, resolve_model, weights_path

PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class FinetuneConfig(StrictModel):
    """Everything that decides a fine-tuning run (recorded in the model's provenance)."""

    base: str = Field(default="smollm2-135m", description="Model to start from: a name (`polar llm models`), name@version, a .gguf or a checkpoint folder.")
    data: str = Field(description="A dataset folder written by `polar llm dataset`.")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", description="Name to register the trained model under.")
    method: Literal["lora", "full"] = "lora"
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    target_modules: list[str] = Field(default_factory=lambda: list(PROJECTIONS))
    lora_layers: int | None = Field(default=None, ge=1, description="LoRA on the top N transformer layers only: the backward pass stops below them (cheaper on a CPU).")
    gradient_checkpointing: bool = Field(default=False, description="Recompute activations in the backward pass: less memory, about a third more compute (TRL's default is on; a 135M model does not need it).")
    epochs: float = Field(default=1.0, gt=0)
    max_steps: int | None = Field(default=None, ge=1, description="Optimizer steps; overrides epochs.")
    learning_rate: float | None = Field(default=None, gt=0, description="Default: 2e-4 for LoRA, 3e-5 for full.")
    batch_size: int = Field(default=2, ge=1, description="Packed sequences per optimizer step.")
    grad_accum: int = Field(default=1, ge=1)
    max_length: int = Field(default=1024, ge=32, description="Tokens per packed sequence.")
    packing: bool = True
    token_budget: int | None = Field(default=None, ge=1, description="Train on a seeded random subset of the train split holding at most this many tokens (CPU budgets).")
    warmup_ratio: float = Field(default=0.05, ge=0, lt=1)
    lr_scheduler: Literal["cosine", "constant", "linear"] = "cosine"
    seed: int = 0
    save_steps: int = Field(default=50, ge=1)
    max_minutes: float | None = Field(default=None, gt=0, description="Stop training after this wall time (a checkpoint is saved), then merge, score, convert and register as usual.")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    threads: int | None = Field(default=None, ge=1, description="CPU threads for torch (default: all cores).")
    engine: Literal["llamacpp", "transformers"] = Field(default="llamacpp", description="How the trained model is served: llama.cpp (GGUF, converted) or `transformers serve` (the checkpoint).")
    gguf_type: Literal["f32", "f16", "bf16", "q8_0"] = "q8_0"
    eval_examples: int = Field(default=200, ge=0, description="Validation examples scored after training.")
    work_dir: str | None = Field(default=None, description="Checkpoints and outputs (default: runs/finetune/<name>).")
    description: str = ""

    @property
    def lr(self) -> float:
        return self.learning_rate or (2e-4 if self.method == "lora" else 3e-5)

    def work(self) -> Path:
        return Path(self.work_dir or Path("runs") / "finetune" / self.name)


# --- base checkpoints and tokenizers ------------------------------------------------------------


def _gguf_cache(entry: ModelEntry, kind: str) -> tuple[Path, Path]:
    """(the GGUF file, its cache folder for `kind`), keyed by the file's path, size and mtime."""
    gguf = weights_path(entry)
    st = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return gguf, cache_dir() / kind / f"{entry.name}-{key}"


def _materialise(out: Path, write: Callable[[Path], None]) -> Path:
    """Write a cache folder once, atomically (a killed run leaves no half folder)."""
    if out.is_dir():
        return out
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    write(tmp)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    from polar.ownership import record_owner

    record_owner(out)  # who made it (a test run shares this cache with its user)
    return out


def _checkpoint_of(entry: ModelEntry) -> Path | None:
    """The checkpoint folder a model is, or was converted from (a trained model's provenance)."""
    if entry.format == "hf":
        return Path(entry.path)
    if (ckpt := entry.provenance.get("checkpoint")) and Path(ckpt).is_dir():
        return Path(ckpt)
    return None


def base_checkpoint(ref: str) -> Path:
    """A Hugging Face checkpoint folder for a model: its own folder, the checkpoint a trained
    model was converted from, or (for a GGUF) the GGUF de-quantised once into Polar's cache."""
    entry = resolve_model(ref)
    if (own := _checkpoint_of(entry)) is not None:
        return own
    gguf, out = _gguf_cache(entry, "checkpoints")

    def write(tmp: Path) -> None:
        from transformers import AutoModelForCausalLM

        print(f"de-quantising {gguf.name} into a checkpoint (once): {out}", flush=True)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # a model loaded from a GGUF is marked quantised and refuses to save: copy its
        # (de-quantised, float32) weights into a plain model of the same config
        config = loaded.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = AutoModelForCausalLM.from_config(config)
        plain.load_state_dict(loaded.state_dict())
        plain.save_pretrained(tmp)
        shutil.copytree(tokenizer_dir(ref), tmp, dirs_exist_ok=True)

    return _materialise(out, write)


def tokenizer_dir(ref: str) -> Path:
    """A folder holding the model's tokenizer (for a GGUF: read from it once, then cached)."""
    entry = resolve_model(ref)
    if (own := _checkpoint_of(entry)) is not None:
        return own
    gguf, out = _gguf_cache(entry, "tokenizers")

    def write(tmp: Path) -> None:
        from transformers import AutoTokenizer

        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(tmp)

    return _materialise(out, write)


def load_tokenizer(ref_or_dir: str | Path) -> Any:
    from transformers import AutoTokenizer

    p = Path(ref_or_dir)
    return AutoTokenizer.from_pretrained(p if (p / "tokenizer_config.json").exists() else tokenizer_dir(str(ref_or_dir)))


def _ids(out: Any) -> list[int]:
    """apply_chat_template returns ids or a BatchEncoding depending on the version."""
    return list(out["input_ids"] if not isinstance(out, list) else out)


def tokenize_example(tok: Any, ex: Example) -> dict[str, list[int]]:
    """input_ids = prompt (the chat template with the assistant turn opened) + completion + EOS;
    completion_mask marks the tokens the loss is taken on. Token ids recorded from the model
    are used as they are."""
    prompt = ex.prompt_token_ids or _ids(tok.apply_chat_template(ex.messages, add_generation_prompt=True, tokenize=True))
    completion = list(ex.completion_token_ids or tok(ex.completion, add_special_tokens=False)["input_ids"])
    if not completion or completion[-1] != tok.eos_token_id:
        completion.append(tok.eos_token_id)
    return {"input_ids": list(prompt) + completion, "completion_mask": [0] * len(prompt) + [1] * len(completion)}


def example_token_counter(ref: str) -> Callable[[Example], tuple[int, int]]:
    tok = load_tokenizer(ref)

    def count(ex: Example) -> tuple[int, int]:
        t = tokenize_example(tok, ex)
        c = sum(t["completion_mask"])
        return len(t["input_ids"]) - c, c

    return count


def packed_sequences(rows: list[dict[str, Any]], max_length: int) -> int:
    """How many sequences TRL's packing (best-fit decreasing, examples never split) makes of
    `rows`: an epoch's steps at batch size 1. Dividing the tokens by `max_length` instead
    assumes full windows: with ~280-token examples in 512-token windows, "one epoch" was 0.6."""
    from datasets import Dataset
    from trl.data_utils import pack_dataset

    return len(pack_dataset(Dataset.from_list([{"input_ids": r["input_ids"]} for r in rows]), max_length, "bfd"))


def within_budget(rows: list[dict[str, list[int]]], budget: int, seed: int) -> list[dict[str, list[int]]]:
    """A seeded random subset of tokenised examples whose tokens add up to at most `budget`."""
    import random

    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    out, used = [], 0
    for i in order:
        n = len(rows[i]["input_ids"])
        if used + n <= budget:
            out.append(rows[i])
            used += n
    if not out:
        raise ConfigError(f"token_budget={budget}: smaller than any one example")
    return out


# --- progress ------------------------------------------------------------------------------------


def _progress_callback(total_steps: int, log: list[dict[str, Any]], show: bool, log_file: Path,
                       max_wall_s: float | None = None, stopped: list[int] | None = None,
                       wall0: float = 0.0, stop_file: Path | None = None) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )
    from transformers import TrainerCallback

    class ProgressCallback(TrainerCallback):
        """A rich bar: steps, tokens/s and the latest loss; every logged row kept in `log`."""

        def __init__(self) -> None:
            self.bar = Progress(TextColumn("[bold]fine-tune[/]"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[info]}"), TimeRemainingColumn(), disable=not show)
            self.task = None
            self.t0 = time.perf_counter()
            self.tokens0 = 0
            self.loss: float | None = None

        def on_train_begin(self, args, state, control, **kw):  # noqa: ANN001
            self.bar.start()
            self.tokens0 = state.num_input_tokens_seen
            self.task = self.bar.add_task("train", total=total_steps, completed=state.global_step, info="")

        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001
            dt = max(time.perf_counter() - self.t0, 1e-9)
            if max_wall_s is not None and wall0 + dt > max_wall_s and state.global_step < total_steps:
                control.should_training_stop = control.should_save = True
                stopped.append(state.global_step)
                if stop_file is not None:  # a resumed run ends here too, not at the planned steps
                    stop_file.write_text(json.dumps({"step": state.global_step}))
            pause_point(f"finetune-step-{state.global_step}")  # a test kills the run here
            tps = (state.num_input_tokens_seen - self.tokens0) / dt
            loss = "-" if self.loss is None else f"{self.loss:.4f}"
            self.bar.update(self.task, completed=state.global_step, info=f"{tps:6.0f} tok/s  loss {loss}")

        def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001
            if logs and "loss" in logs:
                self.loss = float(logs["loss"])
                dt = max(time.perf_counter() - self.t0, 1e-9)
                row = {"step": state.global_step, "loss": self.loss, "tokens": state.num_input_tokens_seen,
                       "tokens_per_s": (state.num_input_tokens_seen - self.tokens0) / dt,
                       "lr": logs.get("learning_rate"), "wall_s": wall0 + dt}
                log.append(row)
                with log_file.open("a") as f:  # follow a background run: tail -f progress.jsonl
                    f.write(json.dumps(row) + "\n")
                if show and not self.bar.console.is_terminal and state.global_step % 10 == 0:
                    print(f"step {row['step']}/{total_steps}: loss {row['loss']:.4f}, "
                          f"{row['tokens_per_s']:.0f} tokens/s", flush=True)

        def on_train_end(self, args, state, control, **kw):  # noqa: ANN001
            self.bar.stop()

    return ProgressCallback()


# --- the trainer ---------------------------------------------------------------------------------


def _completion_loss_trainer() -> type:
    """TRL's SFTTrainer, with the loss computed where it is taken: the LM head runs only on the
    positions whose next token is a completion token (a decision is ~6% of an example's tokens),
    instead of over the whole vocabulary at every position. The same mean token NLL, a fraction
    of the cost on a CPU (for SmolLM2-135M the LM head is ~20% of the forward pass)."""
    import torch.nn.functional as F  # noqa: N812
    from trl import SFTTrainer

    class CompletionLossTrainer(SFTTrainer):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            self.model_accepts_loss_kwargs = False  # a per-batch mean; the Trainer scales for accumulation

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001, ANN201
            labels = inputs["labels"]
            lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # LoRA layers are in place
            lm = getattr(lm, "module", lm)
            hidden = lm.model(**{k: v for k, v in inputs.items() if k != "labels"}).last_hidden_state
            target = labels[:, 1:]
            keep = target != -100
            logits = lm.lm_head(hidden[:, :-1][keep]).float()
            loss = F.cross_entropy(logits, target[keep])
            return (loss, {"logits": logits}) if return_outputs else loss

    return CompletionLossTrainer


# --- evaluation ------------------------------------------------------------------------------------


def score(model: Any, tok: Any, examples: list[Example], device: str) -> dict[str, Any]:
    """Mean completion loss and exact match (greedy reproduces the target) on `examples`."""
    import torch

    if not examples:
        return {"examples": 0}
    model.eval()
    losses, exact, correct, total = [], 0, 0, 0
    with torch.no_grad():
        for ex in examples:
            t = tokenize_example(tok, ex)
            ids = torch.tensor([t["input_ids"]], device=device)
            mask = torch.tensor(t["completion_mask"], device=device).bool()
            logits = model(input_ids=ids).logits[0, :-1]
            target, m = ids[0, 1:], mask[1:]
            lp = torch.log_softmax(logits.float(), -1)[m].gather(1, target[m][:, None]).squeeze(1)
            losses.append(float(-lp.mean()))
            hit = logits[m].argmax(-1) == target[m]
            correct, total = correct + int(hit.sum()), total + int(m.sum())
            exact += bool(hit.all())
    return {"examples": len(examples), "loss": sum(losses) / len(losses), "exact_match": exact / len(examples),
            "token_accuracy": correct / max(total, 1)}


# --- the run ------------------------------------------------------------------------------------------


def _exact_ref(ref: str) -> str:
    """A registered model's name@version (a name alone means the latest, which moves on)."""
    entry = resolve_model(ref)
    return entry.ref if entry.source == "registry" else ref


def _device(choice: str) -> str:
    return resolve_device(choice, "--device")


STOP_FILE = "stopped_by_wall_time.json"  # the step the wall-time budget ended training at


def _last_checkpoint_step(work: Path) -> int:
    steps = [int(p.name.split("-")[1]) for p in work.glob("checkpoint-*") if p.name.split("-")[1].isdigit()]
    return max(steps, default=0)


def _earlier_log(work: Path) -> list[dict[str, Any]]:
    """The logged steps of the interrupted runs up to the checkpoint this run resumes from
    (the steps after it are trained, and logged, again); the log file is rewritten to them."""
    path, upto = work / "progress.jsonl", _last_checkpoint_step(work)
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            row = json.loads(line)
        except ValueError:
            break  # cut by a kill
        if row.get("step", 0) <= upto:
            rows.append(row)
    if path.is_file():
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def _already_registered(reg: ModelRegistry, cfg: FinetuneConfig, weights: Path) -> ModelEntry | None:
    """The model an earlier run of this work dir registered (its weights, its config): a re-run
    after a kill between registering and returning registers nothing twice."""
    config = cfg.model_dump(mode="json")
    found = [m for m in reg.list() if m.name == cfg.name and Path(m.path) == weights.resolve()
             and m.provenance.get("config") == config]
    return max(found, key=lambda m: m.version) if found else None


def finetune(cfg: FinetuneConfig, *, resume: bool = False, progress: bool = True,
             registry: ModelRegistry | None = None) -> ModelEntry:
    """Train, merge, score, convert and register; returns the registered model. `cfg.threads`
    holds for this run only (the process's torch thread count is restored afterwards)."""
    import torch

    threads0 = torch.get_num_threads()
    try:
        return _finetune(cfg, resume, progress, registry)
    finally:
        torch.set_num_threads(threads0)


def _finetune(cfg: FinetuneConfig, resume: bool, progress: bool, registry: ModelRegistry | None) -> ModelEntry:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig

    info = read_info(cfg.data)
    train, val = read_split(cfg.data, "train"), read_split(cfg.data, "validation")
    if not train:
        raise ConfigError(f"{cfg.data}: the train split is empty")
    device = _device(cfg.device)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    work = cfg.work()
    if work.exists() and not resume and any(work.glob("checkpoint-*")):
        raise ConfigError(f"{work} already holds checkpoints: pass --resume to continue, or choose another --out")
    reg = registry or ModelRegistry()
    weights_out = work / f"{cfg.name}.gguf" if cfg.engine == "llamacpp" else work / "model"
    if resume and (done := _already_registered(reg, cfg, weights_out)) is not None:
        return done  # finished and registered before the interruption
    if cfg.engine == "llamacpp":
        from polar.llm.convert import converter_dir

        converter_dir()  # a missing GGUF converter fails now, not after the training it would convert
    t0 = time.perf_counter()
    base_dir = base_checkpoint(cfg.base)
    tok = load_tokenizer(base_dir)
    rows = [tokenize_example(tok, ex) for ex in train]
    if cfg.token_budget is not None:
        rows = within_budget(rows, cfg.token_budget, cfg.seed)
    too_long = sum(len(r["input_ids"]) > cfg.max_length for r in rows)
    if too_long:
        raise ConfigError(f"{too_long} of {len(rows)} examples are longer than max_length={cfg.max_length} tokens; "
                          "raise --max-length or use a more compact template")
    dataset_tokens = sum(len(r["input_ids"]) for r in rows)
    completion_tokens = sum(sum(r["completion_mask"]) for r in rows)
    # safetensors only: a checkpoint folder given by path may come from elsewhere (a pickle runs code)
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32, use_safetensors=True)
    peft_config = None
    if cfg.method == "lora":
        from peft import LoraConfig

        n_layers = model.config.num_hidden_layers
        layers = list(range(max(0, n_layers - cfg.lora_layers), n_layers)) if cfg.lora_layers else None
        peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                 target_modules=cfg.target_modules, layers_to_transform=layers,
                                 task_type="CAUSAL_LM")
    sequences = packed_sequences(rows, cfg.max_length) if cfg.packing else len(rows)
    per_epoch = math.ceil(sequences / (cfg.batch_size * cfg.grad_accum))
    total_steps = cfg.max_steps or max(1, math.ceil(per_epoch * cfg.epochs))
    resuming = bool(resume and any(work.glob("checkpoint-*")))
    if not resuming:  # a fresh run: nothing of an earlier one in its log or its stop
        (work / STOP_FILE).unlink(missing_ok=True)
        (work / "progress.jsonl").unlink(missing_ok=True)
    stop_at = json.loads((work / STOP_FILE).read_text())["step"] if (work / STOP_FILE).is_file() else None
    args = SFTConfig(
        output_dir=str(work), max_steps=total_steps, per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum, learning_rate=cfg.lr, warmup_steps=cfg.warmup_ratio,
        lr_scheduler_type=cfg.lr_scheduler, logging_steps=1, save_steps=cfg.save_steps, save_total_limit=2,
        report_to=[], disable_tqdm=True, seed=cfg.seed, use_cpu=device == "cpu",
        # TRL defaults to bf16 autocast and gradient checkpointing: float32 on a CPU (AVX2-only
        # CPUs have no bf16 units), and no recomputation unless asked
        bf16=device == "cuda" and torch.cuda.is_bf16_supported(), gradient_checkpointing=cfg.gradient_checkpointing,
        packing=cfg.packing, packing_strategy="bfd", max_length=cfg.max_length, completion_only_loss=True,
        include_num_input_tokens_seen="non_padding", dataloader_num_workers=0,
        eos_token=tok.eos_token, pad_token=tok.pad_token or tok.eos_token,
    )
    if stop_at is not None:  # the budget ended the interrupted run there: so does this one
        args.max_steps = stop_at
    log: list[dict[str, Any]] = _earlier_log(work) if resuming else []
    stopped: list[int] = [stop_at] if stop_at is not None else []  # where the wall-time budget stopped training
    work.mkdir(parents=True, exist_ok=True)
    wall0 = log[-1]["wall_s"] if log else 0.0  # training time up to the checkpoint resumed from
    callback = _progress_callback(args.max_steps, log, progress, work / "progress.jsonl",
                                  cfg.max_minutes and 60 * cfg.max_minutes, stopped, wall0=wall0,
                                  stop_file=work / STOP_FILE)
    trainer = _completion_loss_trainer()(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok,
                                         peft_config=peft_config, callbacks=[callback])
    trainer.train(resume_from_checkpoint=resuming or None)
    train_wall = time.perf_counter() - t0 + wall0  # the interrupted runs' training time too
    adapter_dir = None
    if cfg.method == "lora":  # kept: a few MB that `polar llm ship` commits and merges again at install
        adapter_dir = work / "adapter"
        shutil.rmtree(adapter_dir, ignore_errors=True)
        trainer.model.save_pretrained(adapter_dir)
    merged = trainer.model.merge_and_unload() if cfg.method == "lora" else trainer.model
    out_dir = work / "model"
    shutil.rmtree(out_dir, ignore_errors=True)
    merged.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    evaluation = score(merged.to(device), tok, val[: cfg.eval_examples], device) if cfg.eval_examples else {}
    state = trainer.state
    provenance = {
        "base": cfg.base, "base_ref": _exact_ref(cfg.base), "base_checkpoint": str(base_dir), "dataset": str(Path(cfg.data).resolve()),
        "dataset_sha256": info.sha256, "dataset_counts": info.counts, "examples_used": len(rows),
        "method": cfg.method,
        "config": cfg.model_dump(mode="json"), "steps": state.global_step, "epochs": state.epoch,
        "tokens_seen": state.num_input_tokens_seen, "dataset_tokens": dataset_tokens,
        "completion_tokens": completion_tokens, "wall_s": round(train_wall, 1), "device": device,
        "planned_steps": total_steps, "stopped_by_wall_time_at_step": stopped[0] if stopped else None,
        "threads": torch.get_num_threads(), "loss_first": log[0]["loss"] if log else None,
        "loss_last": log[-1]["loss"] if log else None, "eval": evaluation, "checkpoint": str(out_dir.resolve()),
        "adapter": str(adapter_dir.resolve()) if adapter_dir else None,
    }
    (work / "train_log.json").write_text(json.dumps({"log": log, "provenance": provenance}, indent=1))
    weights: Path = out_dir
    if cfg.engine == "llamacpp":
        from polar.llm.convert import to_gguf

        weights = to_gguf(out_dir, weights_out, cfg.gguf_type)
    entry = reg.register(cfg.name, weights, engine=cfg.engine, provenance=provenance,
                         description=cfg.description or f"{cfg.base} fine-tuned ({cfg.method}) on {Path(cfg.data).name}")
    pause_point("finetune-registered")
    return entry
