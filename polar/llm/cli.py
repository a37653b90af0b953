"""`polar llm export` and `polar serve-llm`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

llm_app = typer.Typer(help="The LLM call record and fine-tuning data.", no_args_is_help=True)


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
