"""The `llamay` console command (click): `main` and its subcommands, one module each.

The subcommand modules define their commands without knowing `main`; they are registered
here with `main.add_command`, so nothing imports back into this package.
"""
from __future__ import annotations

import click

from .calibrate import calibrate
from .ladder import ladder
from .run import run
from .serve import serve


@click.group()
@click.version_option(package_name="llamay")
def main() -> None:
    """llamay: a local LLM server whose structured output cannot break."""


main.add_command(serve)
main.add_command(run)
main.add_command(calibrate)
main.add_command(ladder)

__all__ = ["main"]
