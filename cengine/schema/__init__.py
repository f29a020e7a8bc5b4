"""The JSON Schema front end: a schema becomes grammar IR that enforces it exactly.

`compiler` walks the schema; `json_grammar` holds the shared lexical rules (whitespace,
strings, containers); `numbers` compiles numeric bounds and multipleOf into DFAs; `strings`
compiles `pattern` and length bounds on decoded text; `formats` compiles `format`; `drafts`
reads each draft's keywords into 2020-12 vocabulary; `keys` builds the key languages of
`patternProperties`.
"""
from .compiler import (ENFORCED, MAX_ORDER_STATES, MAX_UNROLL, PROPERTY_ORDERS, add_schema,
                       schema_to_ir)
from .drafts import IgnoredKeyword

__all__ = ["ENFORCED", "MAX_ORDER_STATES", "MAX_UNROLL", "PROPERTY_ORDERS", "IgnoredKeyword",
           "add_schema", "schema_to_ir"]
