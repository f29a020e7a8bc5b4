"""Registers the subcommands of `llamay` on server.cli.main."""
from __future__ import annotations
from . import commands_serve  # noqa: E402,F401
from . import commands_run  # noqa: E402,F401
from . import commands_calibrate  # noqa: E402,F401
