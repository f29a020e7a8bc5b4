"""The tool-call layer, beside the runtime: what is common to every dialect (`common`) and one
module per dialect (`hermes` today; a second dialect is one new module implementing
`common.ToolDialect`). Imports cengine only (its public names), never the API or the runtime;
see docs/architecture.md."""
from __future__ import annotations

from . import hermes
from .common import (ToolCall, ToolDialect, ToolFormatError, ToolSpec, parse_tools,
                     tool_choice_mode)

# the dialect the server writes and reads when a request does not say otherwise
DEFAULT_DIALECT: ToolDialect = hermes

__all__ = ["DEFAULT_DIALECT", "ToolCall", "ToolDialect", "ToolFormatError", "ToolSpec", "hermes",
           "parse_tools", "tool_choice_mode"]
