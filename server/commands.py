"""Registers the subcommands of `llamay` on server.cli.main."""
from __future__ import annotations
