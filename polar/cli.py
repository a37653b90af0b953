"""The `polar` command. Every area's `cli` module is listed here and registers its own commands.

Area modules import their heavy dependencies (torch, ray, litellm) inside the commands, so
`polar --help` stays fast.
"""

from __future__ import annotations

import importlib
import sys

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
)

# Each module defines `register(app: typer.Typer) -> None`.
CLI_MODULES = [
    "polar.sandboxes.cli",
    "polar.harnesses.cli",
    "polar.agent.cli",
    "polar.skills.cli",
    "polar.rl.cli",
    "polar.llm.cli",
    "polar.prompts.cli",
    "polar.evals.cli",
]

for _name in CLI_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    try:
        app()
    except PolarError as err:
        Console(stderr=True, soft_wrap=True).print(
            f"[bold red]{type(err).__name__}[/]: {escape(str(err))}", highlight=False
        )
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
