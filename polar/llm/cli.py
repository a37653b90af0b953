"""`polar llm export`, `polar serve-llm` and (registered from here) `polar prompts ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

llm_app = typer.Typer(help="The LLM call record, planner datasets, fine-tuning and trained models.", no_args_is_help=True)


@llm_app.command("export")
def export_cmd(
    records: Annotated[Path, typer.Argument(help="A JSONL call record (a profile's record_path).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the chat dataset (JSONL).")],
    role: Annotated[list[str] | None, typer.Option("--role", help="Keep only calls of this role (repeatable).")] = None,
    include_invalid: Annotated[bool, typer.Option(help="Keep replies that failed validation.")] = False,
    episodes: Annotated[Path | None, typer.Option(help="Keep only calls of successful episodes recorded under this folder.")] = None,
) -> None:
    """Write the recorded calls as a chat fine-tuning dataset ({"messages": [...]} per line)."""
    from polar.llm.export import export_chat_dataset, successful_episodes

    keep = successful_episodes(episodes) if episodes is not None else None
    counts = export_chat_dataset(records, out, roles=role or None, include_invalid=include_invalid, episodes=keep)
    skipped = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in sorted(counts.items()) if k.startswith("skipped:"))
    typer.echo(f"wrote {counts['written']} examples to {out}" + (f" (skipped: {skipped})" if skipped else ""))


@llm_app.command("dataset")
def dataset_cmd(
    episodes: Annotated[list[Path], typer.Argument(help="Episode records: episode.json files, eval cell files, or folders of either.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder to write (train.jsonl, validation.jsonl, dataset.json).")],
    student: Annotated[str | None, typer.Option(help="LLM planner profile whose templates render a teacher's recorded contexts (e.g. local).")] = None,
    calls: Annotated[list[Path] | None, typer.Option("--calls", help="Call record(s) (JSONL) of the model's own episodes (repeatable).")] = None,
    keep: Annotated[str, typer.Option(help="episode: decisions of harness-confirmed successful episodes; outcome: decisions whose execution succeeded; both: both at once.")] = "both",
    val_fraction: Annotated[float, typer.Option(help="Fraction of episode seeds held out as the validation split.")] = 0.2,
    paraphrases: Annotated[Path | None, typer.Option(help="YAML: task string -> other phrasings; each teacher episode is rendered with one of them.")] = None,
    tokenizer: Annotated[str | None, typer.Option(help="Count tokens with this model's tokenizer (e.g. smollm2-135m).")] = None,
) -> None:
    """Turn episodes into a planner fine-tuning dataset: one example per kept decision, with
    the exact prompt the model saw (or the student's rendering of a teacher's context) and the
    canonical decision JSON as the target. Split by episode seed, deduplicated."""
    from polar.errors import ConfigError
    from polar.planners.dataset import build_dataset, read_paraphrases

    if keep not in ("episode", "outcome", "both"):
        raise ConfigError(f"--keep: expected episode, outcome or both, got {keep!r}")
    counter = None
    if tokenizer is not None:
        from polar.llm.finetune import example_token_counter

        counter = example_token_counter(tokenizer)
    info = build_dataset(list(episodes), out, student=student, calls=list(calls or []), keep=keep,  # type: ignore[arg-type]
                         val_fraction=val_fraction,
                         paraphrases=read_paraphrases(paraphrases) if paraphrases else None,
                         count_tokens=counter, tokenizer=tokenizer)
    typer.echo(dataset_summary(info, out))


def dataset_summary(info, out: Path) -> str:  # noqa: ANN001 - a DatasetInfo
    lines = [f"wrote {out}: " + ", ".join(f"{n} {k}" for k, n in info.counts.items()) + f" examples (sha256 {info.sha256})"]
    if info.tokens:
        lines.append("tokens: " + ", ".join(f"{k} {v}" for k, v in info.tokens.items()) + f" ({info.tokenizer})")
    lines.append("per skill: " + ", ".join(f"{k} {v}" for k, v in info.per_skill.items()))
    lines.append("per harness: " + ", ".join(f"{k} {v}" for k, v in info.per_harness.items()))
    if info.skipped:
        lines.append("skipped: " + ", ".join(f"{k} {v}" for k, v in sorted(info.skipped.items())))
    lines.append(f"with the model's own token ids: {info.with_token_ids}")
    return "\n".join(lines)


def serve_llm_cmd(
    model: Annotated[str, typer.Argument(help="A Hugging Face model id or a local path, e.g. Qwen/Qwen2.5-7B-Instruct.")],
    port: Annotated[int, typer.Option(help="Port of the OpenAI-compatible server.")] = 8000,
    host: Annotated[str, typer.Option(help="Interface to bind (127.0.0.1 keeps it private).")] = "127.0.0.1",
    vllm_arg: Annotated[list[str] | None, typer.Option("--vllm-arg", help="Extra argument passed to `vllm serve` (repeatable).")] = None,
) -> None:
    """Serve MODEL with vLLM for planner profiles using `hosted_vllm/MODEL` (needs the vllm extra of polar)."""
    from polar.llm.serve import serve

    raise typer.Exit(serve(model, host, port, vllm_arg))


def register(app: typer.Typer) -> None:
    app.add_typer(llm_app, name="llm")
    app.command("serve-llm")(serve_llm_cmd)
    # The prompts commands ride along so that CLI_MODULES needs one line for this area.
    from polar.prompts.cli import register as register_prompts

    register_prompts(app)
