"""The `llamay` console command (click): serve, run, calibrate."""
from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="llamay")
def main() -> None:
    """llamay: a local LLM server whose structured output cannot break."""


# Subcommands register themselves here (see server/commands_*.py); imported for the side effect.
from . import commands  # noqa: E402,F401
