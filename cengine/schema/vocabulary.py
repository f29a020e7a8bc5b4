"""The vocabulary every part of the schema compiler shares: the keywords it enforces, the
internal keywords of the nodes it rewrites, and the tests of JSON values those parts read
(types, counts, bounds, equality as JSON Schema compares documents)."""
from __future__ import annotations

import json
from typing import Any, List, Optional, Set

from . import drafts

TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")

# keywords that never change which documents are valid (in the 2020-12 reading every node
# is rewritten into)
ANNOTATIONS = drafts.ALWAYS_ANNOTATIONS

# internal keywords of rewritten nodes (never in a user's schema: the compiler makes them)
ABSENT = "$llamay-absent"        # names that must not occur (from not/required, variants)
EXCLUDE = "$llamay-exclude"      # values that must not occur (from not/enum, not/const)
CONTAINS = "$llamay-contains"    # a schema some element of the array satisfies (not/items)
FRACTION = "$llamay-fraction"    # true: a number that is no integer (not/type integer)
# string languages the decoded value must not be in (from not/pattern, not/format): a list of
# ["pattern", regex] / ["format", name] pairs
NOT_LANGUAGES = "$llamay-not-languages"
# patterns the decoded value must contain a match of beside `pattern` (two patterns merged)
PATTERNS = "$llamay-patterns"

ENFORCED = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "prefixItems",
    "minItems", "maxItems", "enum", "const", "minLength", "maxLength", "$ref", "anyOf", "$id",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "pattern",
    "format", "allOf", "oneOf", "not", "if", "then", "else", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
    "contains", "minContains", "maxContains",
    ABSENT, EXCLUDE, CONTAINS, FRACTION, NOT_LANGUAGES, PATTERNS,
})

# keywords that only act together with a partner; alone they have no effect (spec)
NEEDS_PARTNER = {"then": "if", "else": "if", "minContains": "contains", "maxContains": "contains"}

# an array with an element that must satisfy `contains` (or fail `items`, from `not`) beside
# minItems / maxItems: one alternative per place of that element, so at most this many places
MAX_WITNESS_BOUND = 16

# at most this many variants for dependentRequired/dependentSchemas (2**keys) and for the
# distribution of two anyOf lists in a merge (len * len)
MAX_VARIANTS = 64


def _is_annotation(key: str) -> bool:
    # vendor extensions (OpenAPI `x-...`) are annotations by convention
    return key in ANNOTATIONS or key.startswith("x-")


def _type_list(t):
    """`type` as a list of known type names, True when absent, None when malformed."""
    if t is None:
        return True
    names = [t] if isinstance(t, str) else t
    if not isinstance(names, list) or not all(isinstance(n, str) and n in TYPES for n in names):
        return None
    return names


def _is_type(v, t: str) -> bool:
    """JSON Schema's type test (booleans are not numbers; 1.0 is an integer)."""
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if t == "integer":
        return isinstance(v, int) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float))
    return isinstance(v, {"string": str, "array": list, "object": dict}[t])


def _is_bound(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool) and v >= 0) or \
        (isinstance(v, float) and v.is_integer() and v >= 0)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON documents (1 and true differ; key order does not matter)."""
    # the merges compare the same objects and short strings (`type`) over and over: those
    # answers need no serializing (json.dumps writes a str, int or bool differently from any
    # other value of another type, and equal ones alike)
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta in _SCALARS and tb in _SCALARS:
        return ta is tb and a == b
    # objects and arrays member by member (the merges compare property schemas of many
    # keys, which serializing wrote out whole, twice, per comparison): equal key sets of
    # strings (json.dumps writes other keys as strings, so those are left to it), then
    # equal members; json.dumps writes a tuple as an array
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        if all(type(k) is str for k in a) and all(type(k) is str for k in b):
            return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


_SCALARS = (str, int, bool)


def _json_in(v: Any, values: List[Any]) -> bool:
    """v equals one of values as JSON Schema compares (1 == 1.0, true != 1)."""
    return any(_json_equal(v, w) for w in values)


def _json_among(xs: List[Any], values: List[Any]) -> List[Any]:
    """[x for x in xs if _json_in(x, values)]: a string equals only a string (the same one),
    so those are looked up in a set (merging two enums of many strings compared every pair)."""
    if len(xs) * len(values) <= 16:
        return [x for x in xs if _json_in(x, values)]
    strs = {w for w in values if type(w) is str}
    others = [w for w in values if type(w) is not str]
    return [x for x in xs if (x in strs if type(x) is str else _json_in(x, others))]


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _json_key(v: Any) -> Any:
    """A hashable key of a JSON value under _json_equal: equal keys exactly for equal values
    (1 and 1.0 one key, true and 1 two, object member order ignored)."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)             # 1 == 1.0 and hash(1) == hash(1.0)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, (list, tuple)):
        return ("a", tuple(_json_key(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, _json_key(x)) for k, x in v.items()))
    return ("z", v)


def _values_of(schema: dict) -> Optional[list]:
    """The values const and enum of schema allow (both: the ones in both), None: any."""
    out = None
    if "enum" in schema and isinstance(schema["enum"], list):
        out = list(schema["enum"])
    if "const" in schema:
        c = schema["const"]
        out = [c] if out is None or _json_in(c, out) else []
    return out


def _types_overlap(a: Set[str], b: Set[str]) -> Set[str]:
    out = a & b
    if "number" in a and "integer" in b or "integer" in a and "number" in b:
        out.add("integer")
    return out
