"""The tool-call layer, beside the runtime: what is common to every dialect (`common`, `base`),
one module per model family's dialect (`hermes`, `llama3`, ...) and the choice among them
(`registry`: detected from the GGUF's chat template, or forced). Imports cengine only (its
public names), never the API or the runtime; see docs/architecture.md."""
from __future__ import annotations

from . import hermes
from .base import Dialect, RegionReader
from .common import (ToolCall, ToolDialect, ToolFormatError, ToolSpec, allowed_tool_names,
                     parse_tools, tool_choice_mode)
from .registry import all_dialects, detect_dialect, dialect_for, get_dialect

# the dialect the server writes and reads when nothing else is known (the generic block)
DEFAULT_DIALECT: Dialect = hermes.HERMES

__all__ = ["DEFAULT_DIALECT", "Dialect", "allowed_tool_names", "RegionReader", "ToolCall",
           "ToolDialect", "ToolFormatError", "ToolSpec", "all_dialects", "detect_dialect",
           "dialect_for", "get_dialect", "hermes", "parse_tools", "tool_choice_mode"]
