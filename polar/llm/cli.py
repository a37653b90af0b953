"""`polar llm export`, `polar llm models` and `polar serve-llm`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

llm_app = typer.Typer(help="Local models, the LLM call record and fine-tuning data.", no_args_is_help=True)


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


models_app = typer.Typer(help="Local models: the built-in ones, any GGUF file or checkpoint folder, "
                                "and registered (e.g. fine-tuned) models.")


@models_app.callback(invoke_without_command=True)
def models_cmd(
    ctx: typer.Context,
    path: Annotated[list[Path] | None, typer.Option("--path", help="Also describe this .gguf file or checkpoint folder (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the local models Polar knows: name, engine, weights, size, context length, licence."""
    if ctx.invoked_subcommand is not None:
        return
    import json

    from polar.errors import ConfigError
    from polar.llm.models import describe, entry_for_path, list_models

    rows = list_models() + [(entry_for_path(p), str(p), None) for p in path or []]
    out = []
    for entry, name, missing in rows:
        row: dict = {"name": name, "available": missing is None}
        if entry is not None:
            row |= {"engine": entry.engine, "format": entry.format, "path": entry.path, "source": entry.source,
                    "license": entry.license, "license_file": entry.license_file, "description": entry.description}
            if missing is None:
                try:
                    row |= describe(entry)
                except ConfigError as err:
                    row |= {"available": False, "error": str(err)}
        if missing:
            row["error"] = missing
        out.append(row)
    if as_json:
        typer.echo(json.dumps(out, indent=1))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("name", "engine", "size", "context", "licence", "weights", box=None)
    for r in out:
        size = f"{r['size_bytes'] / 1e6:.0f} MB" if r.get("size_bytes") else "-"
        where = escape(r.get("path") or "-")
        if r.get("note"):
            where += f" ({r['note']})"
        if not r["available"]:
            where = f"[red]unavailable[/]: {escape(str(r.get('error')))}"
        table.add_row(r["name"], r.get("engine", "-"), size, str(r.get("context_length") or "-"),
                      r.get("license") or "-", where)
    Console(soft_wrap=True).print(table)


@models_app.command("add")
def models_add_cmd(
    name: Annotated[str, typer.Argument(help="The model's name (its next version is assigned).")],
    path: Annotated[Path, typer.Argument(help="A .gguf file or a checkpoint folder with config.json.")],
    engine: Annotated[str | None, typer.Option(help="llamacpp | transformers | vllm (default: by format).")] = None,
    description: Annotated[str, typer.Option(help="One line.")] = "",
    provenance: Annotated[Path | None, typer.Option(help="A JSON file: base model, dataset hash, steps, tokens, eval ...")] = None,
) -> None:
    """Register a model (e.g. a fine-tuned planner) under a name, versioned, in .polar/models.json."""
    import json

    from polar.errors import ConfigError
    from polar.llm.models import ModelRegistry

    if engine not in (None, "llamacpp", "transformers", "vllm"):
        raise ConfigError(f"--engine: expected llamacpp, transformers or vllm, got {engine!r}")
    prov = {}
    if provenance is not None:
        try:
            prov = json.loads(provenance.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"{provenance}: not a JSON file: {err}") from None
    reg = ModelRegistry()
    entry = reg.register(name, path, engine=engine, description=description, provenance=prov)  # type: ignore[arg-type]
    typer.echo(f"registered {entry.ref} ({entry.engine}, {entry.path}) in {reg.path}")


def serve_llm_cmd(
    model: Annotated[str | None, typer.Argument(help="A model name (polar llm models), name@version, a .gguf file, a checkpoint folder, or (vLLM) a hub id.")] = None,
    engine: Annotated[str | None, typer.Option(help="llamacpp (GGUF, CPU), transformers (checkpoint folder) or vllm (GPU). Default: the model's.")] = None,
    port: Annotated[int, typer.Option(help="Port of the OpenAI-compatible server.")] = 8012,
    host: Annotated[str, typer.Option(help="Interface to bind (127.0.0.1 keeps it private).")] = "127.0.0.1",
    n_ctx: Annotated[int, typer.Option(help="llama.cpp context window (prompt + reply tokens).")] = 2048,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: all cores but one).")] = None,
    prompt_cache: Annotated[bool, typer.Option(help="llama-cpp-python's RAM cache of prompt states (leaks memory; "
                                                     "consecutive requests reuse their shared prefix without it).")] = False,
    engine_arg: Annotated[list[str] | None, typer.Option("--engine-arg", "--vllm-arg", help="Extra argument for the engine (repeatable).")] = None,
    foreground: Annotated[bool, typer.Option(help="Stay attached (Ctrl-C stops the server).")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the server Polar started on --host/--port.")] = False,
    show_status: Annotated[bool, typer.Option("--status", help="Say what runs on --host/--port.")] = False,
) -> None:
    """Start a real OpenAI-compatible engine for a local model, wait until it answers, and
    leave it running in the background (pid file and log under ~/.cache/polar/servers).

    Examples: `polar serve-llm smollm2-135m` (llama.cpp, for planners/local.yaml);
    `polar serve-llm runs/ft/checkpoint --engine transformers`;
    `polar serve-llm Qwen/Qwen2.5-7B-Instruct --engine vllm --port 8000`; `polar serve-llm --stop`.
    """
    import json

    from polar.errors import ConfigError
    from polar.llm import serve

    if stop:
        state = serve.stop(host, port)
        if state is None:
            typer.echo(f"no server started by Polar on {host}:{port}")
        elif state["was_running"]:
            typer.echo(f"stopped {state['engine']} server (pid {state['pid']}, {state['model']}) on {host}:{port}")
        else:
            typer.echo(f"the {state['engine']} server Polar started on {host}:{port} (pid {state['pid']}) had "
                       f"already exited; see its log {state.get('log')}")
        return
    if show_status:
        typer.echo(json.dumps(serve.status(host, port), indent=1))
        return
    if model is None:
        raise ConfigError("serve-llm: give a MODEL (see `polar llm models`), or --stop / --status")
    if engine not in (None, "llamacpp", "transformers", "vllm"):
        raise ConfigError(f"--engine: expected llamacpp, transformers or vllm, got {engine!r}")
    settings = serve.ServerSettings(model=model, engine=engine, host=host, port=port, n_ctx=n_ctx,  # type: ignore[arg-type]
                                    threads=threads, prompt_cache=prompt_cache, engine_args=engine_arg or [])
    state = serve.start(settings, foreground=foreground, announce=typer.echo)
    if not foreground:
        typer.echo(f"profile:  model: openai/{state['served_name']}\n          api_base: {settings.api_base}\n"
                   f"stop it:  polar serve-llm --stop --port {port}")


def register(app: typer.Typer) -> None:
    llm_app.add_typer(models_app, name="models")
    app.add_typer(llm_app, name="llm")
    app.command("serve-llm")(serve_llm_cmd)
