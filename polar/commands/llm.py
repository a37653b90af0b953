"""`polar llm export`, `polar llm models` and `polar serve-llm`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

llm_app = typer.Typer(help="Local models, the LLM call record, planner datasets, fine-tuning and trained models.", no_args_is_help=True)


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


@llm_app.command("finetune")
def finetune_cmd(
    data: Annotated[Path, typer.Option("--data", help="A dataset folder from `polar llm dataset`.")],
    out: Annotated[str, typer.Option("--out", help="Name to register the trained model under (its next version).")],
    base: Annotated[str, typer.Option(help="Model to start from: a name from `polar llm models`, name@version, a .gguf or a checkpoint folder.")] = "smollm2-135m",
    method: Annotated[str, typer.Option(help="lora (an adapter on the attention and MLP projections, merged afterwards) or full.")] = "lora",
    lora_r: Annotated[int, typer.Option(help="LoRA rank.")] = 16,
    lora_layers: Annotated[int | None, typer.Option(help="LoRA on the top N transformer layers only: the backward pass stops below them (cheaper on a CPU).")] = None,
    epochs: Annotated[float, typer.Option(help="Passes over the (packed) train split.")] = 1.0,
    max_steps: Annotated[int | None, typer.Option(help="Optimizer steps (overrides --epochs).")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate (default 2e-4 LoRA, 3e-5 full).")] = None,
    batch_size: Annotated[int, typer.Option(help="Packed sequences per step.")] = 2,
    max_length: Annotated[int, typer.Option(help="Tokens per packed sequence.")] = 1024,
    token_budget: Annotated[int | None, typer.Option(help="Train on a random subset of at most this many tokens.")] = None,
    device: Annotated[str, typer.Option(help="auto (a GPU when present), cpu or cuda.")] = "auto",
    threads: Annotated[int | None, typer.Option(help="CPU threads for torch.")] = None,
    engine: Annotated[str, typer.Option(help="Serve the result with llamacpp (converted to GGUF) or transformers (the checkpoint).")] = "llamacpp",
    work_dir: Annotated[Path | None, typer.Option(help="Checkpoints and outputs (default runs/finetune/<out>).")] = None,
    max_minutes: Annotated[float | None, typer.Option(help="Stop training after this wall time (then merge, score, convert, register).")] = None,
    eval_examples: Annotated[int, typer.Option(help="Validation examples scored after training.")] = 200,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the last checkpoint in the work dir.")] = False,
) -> None:
    """Fine-tune a planner model (TRL SFT, loss on the decision only, packed sequences), then
    merge, score on the validation split, convert and register it with its provenance."""
    from polar.config import validate
    from polar.llm.finetune import FinetuneConfig, finetune

    cfg = validate(FinetuneConfig, {
        "base": base, "data": str(data), "name": out, "method": method, "lora_r": lora_r, "lora_alpha": 2 * lora_r,
        "lora_layers": lora_layers,
        "epochs": epochs, "max_steps": max_steps, "learning_rate": lr, "batch_size": batch_size,
        "max_length": max_length, "token_budget": token_budget, "device": device, "threads": threads,
        "engine": engine, "work_dir": str(work_dir) if work_dir else None, "max_minutes": max_minutes,
        "eval_examples": eval_examples}, "polar llm finetune")
    entry = finetune(cfg, resume=resume)
    p = entry.provenance
    ev = p.get("eval") or {}
    typer.echo(f"registered {entry.ref} ({entry.engine}: {entry.path})\n"
               f"{p['steps']} steps, {p['tokens_seen']} tokens in {p['wall_s']:.0f} s "
               f"({p['tokens_seen'] / max(p['wall_s'], 1e-9):.0f} tokens/s), loss {p['loss_first']:.3f} -> {p['loss_last']:.3f}"
               + (f"; validation: loss {ev['loss']:.3f}, exact match {ev['exact_match']:.0%} of {ev['examples']}" if ev.get("examples") else ""))


@llm_app.command("improve")
def improve_cmd(
    config: Annotated[Path, typer.Argument(help="An improve config (YAML): model, name, profile, tasks, eval_tasks, episodes, temperature, finetune ...")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for every round's episodes, data, checkpoints and results.json.")],
    rounds: Annotated[int | None, typer.Option(help="Rounds (overrides the config's).")] = None,
    skip_start: Annotated[bool, typer.Option("--skip-start", help="Do not evaluate the starting model first.")] = False,
) -> None:
    """Self-improvement rounds: sample episodes at temperature with the current model, keep what
    the harness rewarded, fine-tune on it, evaluate on held-out seeds; a ledger row per round."""
    from polar.config import load_yaml
    from polar.evals.improve import ImproveConfig, improve

    cfg = load_yaml(config, ImproveConfig)
    if rounds is not None:
        cfg = cfg.model_copy(update={"rounds": rounds})
    res = improve(cfg, out, evaluate_start=not skip_start)
    for point in res["curve"]:
        typer.echo(f"{point['arm']:>10}: success {point['success']:.2f}")
    typer.echo(f"results: {out / 'results.json'}")


@llm_app.command("rl")
def rl_cmd(
    config: Annotated[Path, typer.Argument(help="An RL recipe (YAML, polar.evals.planner_rl.RLConfig): model, name, arm, tasks, group_size, groups, temperature, grpo ...")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The run folder (state.json, iterations, results.json); the same --out resumes.")],
    iterations: Annotated[int | None, typer.Option(help="Iterations (overrides the recipe's; may grow on resume).")] = None,
) -> None:
    """Policy-gradient RL of a planner model from its episodes' reward (GRPO over the exact
    sampled tokens), or the same-budget reward-filtered SFT baseline (`arm: filtered-sft`):
    sample -> update -> merge and convert -> serve, one table row per iteration; resumable."""
    from polar.config import load_yaml
    from polar.evals.planner_rl import RLConfig, rl

    res = rl(load_yaml(config, RLConfig), out, iterations=iterations)
    typer.echo(f"{len(res['rows'])} iterations; results: {out / 'results.json'}")


@llm_app.command("ship")
def ship_cmd(
    model: Annotated[str, typer.Argument(help="A registered model trained with LoRA (name or name@version).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="The folder to write (default planners/models/<name>); its name is the shipped model's name.")] = None,
    description: Annotated[str, typer.Option(help="One line shown by `polar llm models`.")] = "",
) -> None:
    """Write a fine-tuned model as a folder to commit: its LoRA adapters (a few MB, the whole
    chain of fine-tunes) and provenance. Whoever has the folder uses the model by name: it is
    merged into its base and converted to GGUF on first use."""
    from polar.llm.adapters import ship
    from polar.llm.models import SHIPPED_FOLDER
    from polar.workspace import user_dir

    target = out or user_dir("planners") / SHIPPED_FOLDER / model.partition("@")[0]
    folder = ship(model, target, description=description)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    typer.echo(f"wrote {folder} ({size / 1e6:.1f} MB); use it as model {folder.name!r} "
               f"(server.model in a planner profile)")


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

    from polar.console import print_table

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
    print_table(Console(soft_wrap=True), table)


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
    engine: Annotated[str | None, typer.Option(help="llamacpp (GGUF, CPU), llama-server (GGUF, CPU, parallel slots), transformers (checkpoint folder) or vllm (GPU). Default: the model's.")] = None,
    port: Annotated[int, typer.Option(help="Port of the OpenAI-compatible server.")] = 8012,
    host: Annotated[str, typer.Option(help="Interface to bind (127.0.0.1 keeps it private).")] = "127.0.0.1",
    n_ctx: Annotated[int, typer.Option(help="llama.cpp context window (prompt + reply tokens).")] = 2048,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: all cores but one).")] = None,
    prompt_cache: Annotated[bool, typer.Option(help="llama-cpp-python's RAM cache of prompt states (leaks memory; "
                                                     "consecutive requests reuse their shared prefix without it).")] = False,
    parallel: Annotated[int, typer.Option(help="llama-server's slots: requests decoded together in one batch.")] = 1,
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
    if engine not in (None, "llamacpp", "llama-server", "transformers", "vllm"):
        raise ConfigError(f"--engine: expected llamacpp, llama-server, transformers or vllm, got {engine!r}")
    settings = serve.ServerSettings(model=model, engine=engine, host=host, port=port, n_ctx=n_ctx,  # type: ignore[arg-type]
                                    threads=threads, prompt_cache=prompt_cache, parallel=parallel,
                                    engine_args=engine_arg or [])
    state = serve.start(settings, foreground=foreground, announce=typer.echo)
    if not foreground:
        typer.echo(f"profile:  model: openai/{state['served_name']}\n          api_base: {settings.api_base}\n"
                   f"stop it:  polar serve-llm --stop --port {port}")


def register(app: typer.Typer) -> None:
    llm_app.add_typer(models_app, name="models")
    app.add_typer(llm_app, name="llm")
    app.command("serve-llm")(serve_llm_cmd)
