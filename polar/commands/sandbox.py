"""`polar sandbox run | build-image | doctor`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

sandbox_app = typer.Typer(help="Run code in a sandbox, build its image, check what is enforced.",
                          no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("run")
def run(
    file: Path = typer.Argument(..., help="Python source defining the function to call, or the name of a "
                                "shipped example under sandboxes/examples/ (e.g. cartpole_policy)"),
    backend: str | None = typer.Option(None, help="restricted | process | docker (default: the profile's)"),
    call: str = typer.Option("act", help="function to call"),
    args: str = typer.Option("[]", help="JSON list of positional arguments"),
    timeout: float | None = typer.Option(None, help="wall-clock seconds per call"),
    memory_mb: int | None = typer.Option(None, "--memory-mb", help="memory limit in MB"),
    profile: str = typer.Option("default", help="sandbox profile: a name under sandboxes/profiles/ "
                                "(default, strict, docker) or a YAML path"),
) -> None:
    """Load FILE in a sandbox, call one function, print its JSON result."""
    from polar.config import read_text, validate
    from polar.errors import ConfigError
    from polar.sandboxes.base import SandboxLimits, make_sandbox
    from polar.sandboxes.profiles import load_sandbox_profile

    prof = load_sandbox_profile(profile)
    try:
        call_args = json.loads(args)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--args: not valid JSON: {err}") from None
    if not isinstance(call_args, list):
        raise ConfigError("--args: must be a JSON list of positional arguments, e.g. '[[0.1, 0.2]]'")
    if not file.is_file():  # a name: the workspace's or the shipped sandboxes/examples/<name>.py
        from polar.workspace import resolve_asset

        file = resolve_asset("sandboxes", str(file), folder="examples", suffix=".py", what="example")
    try:
        source = read_text(file)  # a missing, binary or non-UTF-8 file is a ConfigError naming it
    except ConfigError as err:
        raise ConfigError(f"{err}; expected Python source defining act(obs)") from None
    updates = {k: v for k, v in (("timeout_s", timeout), ("memory_mb", memory_mb)) if v is not None}
    limits = validate(SandboxLimits, {**prof.limits.model_dump(), **updates}, "--timeout/--memory-mb")
    with make_sandbox(backend or prof.backend, limits) as box:
        box.load(source)
        typer.echo(json.dumps(box.call(call, *call_args)))


@sandbox_app.command("build-image")
def build_image_cmd(force: bool = typer.Option(False, help="rebuild even if it exists")) -> None:
    """Build the docker backend's image from Debian packages (cached by content hash)."""
    from polar.sandboxes.engine import docker_client
    from polar.sandboxes.image import build_image

    ref = build_image(docker_client(), force=force, log=lambda m: typer.echo(m, err=True))
    typer.echo(ref)


@sandbox_app.command("doctor")
def doctor(
    stop_engine: bool = typer.Option(False, help="only stop the podman service Polar started, "
                                     "and exit"),
    keep_engine: bool = typer.Option(False, help="leave running a podman service this check "
                                     "had to start (by default it stops it again)"),
) -> None:
    """Say what each backend can enforce on this machine, checked by probing.

    Checking the docker backend needs a Docker-API engine: when none is running, doctor
    starts Podman's service for the check and stops it afterwards (unless --keep-engine);
    an engine that was already running is left as it was. Either way the last line says so.
    """
    from polar.sandboxes.doctor import report
    from polar.sandboxes.engine import started_here, stop_podman_service

    if stop_engine:
        typer.echo("stopped" if stop_podman_service() else "no podman service started by Polar")
        return
    for line in report():
        typer.echo(line)
    if not started_here():
        typer.echo("engine: this check started none (one already running is left as it was)")
    elif keep_engine:
        typer.echo("engine: started Podman's API service for this check and left it running "
                   "(--keep-engine); stop it with `polar sandbox doctor --stop-engine`")
    else:
        from polar.sandboxes.docker import finish_removals

        finish_removals()  # the probes' containers go through this service: removed before it stops
        stopped = stop_podman_service()
        typer.echo("engine: " + ("started Podman's API service for this check and stopped it again"
                                 if stopped else "could not stop the podman service it started"))
