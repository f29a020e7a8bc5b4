"""The JSON Schema front end: a schema becomes grammar IR that enforces it exactly.

`compiler` holds the entry points and the dispatch over a node's keywords, its parts one
concern each: `refs` ($ref), `conjunction` (allOf merges), `negation` (not, if/then/else,
oneOf), `enums` (enum / const, and the validator of single values), `objects` (properties,
patternProperties, min/maxProperties, dependencies, member order); `vocabulary` holds the
keywords and value tests they share, `pattern_names` the names-against-patterns checks.
`json_grammar` holds the shared lexical rules (whitespace, strings, containers); `numbers`
compiles numeric bounds and multipleOf into DFAs; `strings` compiles `pattern` and length
bounds on decoded text; `formats` compiles `format`; `drafts` reads each draft's keywords
into 2020-12 vocabulary; `keys` builds the key languages of `patternProperties`.
"""
from .compiler import MAX_UNROLL, PROPERTY_ORDERS, add_schema, schema_to_ir
from .drafts import IgnoredKeyword
from .objects import MAX_ORDER_STATES
from .vocabulary import ENFORCED

__all__ = ["ENFORCED", "MAX_ORDER_STATES", "MAX_UNROLL", "PROPERTY_ORDERS", "IgnoredKeyword",
           "add_schema", "schema_to_ir"]
