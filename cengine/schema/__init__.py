"""The JSON Schema front end: a schema becomes grammar IR that enforces it exactly.

`compiler` walks the schema; `json_grammar` holds the shared lexical rules (whitespace,
strings, containers); `numbers` compiles numeric bounds and multipleOf into DFAs; `strings`
compiles `pattern` and length bounds on decoded text; `formats` compiles `format`.
"""
from .compiler import ENFORCED, MAX_UNROLL, add_schema, schema_to_ir

__all__ = ["ENFORCED", "MAX_UNROLL", "add_schema", "schema_to_ir"]
