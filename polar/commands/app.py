"""The `polar` command. Every command group's module in `polar.commands` is listed here and
registers its own commands.

Command modules import their heavy dependencies (torch, ray, litellm) inside the commands, so
`polar --help` stays fast. Areas export plain functions; only this package knows typer.
"""

from __future__ import annotations

import importlib
import signal
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from polar.errors import PolarError

app = typer.Typer(
    name="polar",
    help="Polar: planners over RL skills and sandboxed policy code, on any harness.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


def _version(value: bool) -> None:
    if value:
        import polar

        typer.echo(f"polar {polar.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print Polar's version and exit."),
) -> None:
    """Polar: planners over RL skills and sandboxed policy code, on any harness."""

# Each module defines `register(app: typer.Typer) -> None`.
CLI_MODULES = [
    "polar.commands.init",
    "polar.commands.sandbox",
    "polar.commands.harness",
    "polar.commands.task",
    "polar.commands.skills",
    "polar.commands.train",
    "polar.commands.llm",
    "polar.commands.prompts",
    "polar.commands.evals",
    "polar.commands.code",
]

for _name in CLI_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    from polar.ownership import run_id

    run_id()  # one run id for this command and every process it starts (servers, Ray workers)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        app()
    except PolarError as err:
        _print_error(type(err).__name__, str(err))
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        sys.exit(130)
    except Exception as err:  # last resort: a bug or a library's own error, never a traceback
        log = _write_crash_log(err)
        where = f"the traceback is in {log}" if log else "no log could be written"
        _print_error(type(err).__name__, f"{err}\n(unexpected error; {where})")
        sys.exit(1)


def _terminated(signum: int, _frame: object) -> None:
    """SIGTERM (`kill`, a scheduler's stop) unwinds like Ctrl-C: `finally` blocks run, so the
    model servers and sandboxes a command started are stopped, not left running."""
    Console(stderr=True).print("terminated")
    raise SystemExit(128 + signum)


def _print_error(kind: str, message: str) -> None:
    Console(stderr=True, soft_wrap=True).print(f"[bold red]{kind}[/]: {escape(message)}", highlight=False)


def _write_crash_log(err: BaseException) -> Path | None:
    """Write the traceback to `$POLAR_LOG_DIR` (default: <tmp>/polar) and return the file."""
    import os
    import tempfile
    import time
    import traceback

    folder = Path(os.environ.get("POLAR_LOG_DIR") or Path(tempfile.gettempdir()) / "polar")
    path = folder / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(f"polar {' '.join(sys.argv[1:])}\n\n" + "".join(traceback.format_exception(err)))
    except OSError:
        return None
    return path


if __name__ == "__main__":
    main()
