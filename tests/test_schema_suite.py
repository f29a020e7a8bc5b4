"""JSON-Schema-Test-Suite (draft 2020-12) against the schema compiler.

Every group of every file is tried with closed_objects=False (spec parity):
* a group that compiles must reject every invalid instance (in every spelling and key order
  we try: that is the "never weaken" promise) and accept every valid instance, serialised
  compact and with ", " / ": " separators, keys in our documented order (the schema's
  `properties` first, extra keys after); the few valid instances we knowingly refuse are
  listed in MISSED with the reason;
* a group that does not compile must raise CompileError naming a keyword the schema really
  uses; in the files of enforced keywords, each such group is listed in SKIPPED with why.
"""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

import material
from key_order import key_orderings
from cengine import CompileError
from cengine.grammar import Grammar
from cengine.schema.formats import FORMATS
from jsonschema import Draft202012Validator
from cengine.schema import ENFORCED, schema_to_ir

SUITE = material.json_schema_test_suite("draft2020-12")

# files of the keywords this compiler enforces
ENFORCED_FILES = [
    "additionalProperties", "anchor", "anyOf", "boolean_schema", "contains", "minContains",
    "maxContains", "const", "default", "defs", "enum",
    "infinite-loop-detection", "items", "maxItems", "maxLength", "minItems", "minLength",
    "prefixItems", "properties", "ref", "required", "type",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "pattern",
    "format",
]

_NO_DOC = "the schema accepts no document at all: nothing to generate, refused"
_REMOTE = ("remote or relative-URI $ref, or an anchor of an embedded resource: only the "
           "document's root resource is read")

# (file, group description) -> why the group is refused although its file is enforced
SKIPPED = {
    ("anchor", "Location-independent identifier with absolute URI"): _REMOTE,
    ("anchor", "Location-independent identifier with base URI change in subschema"): _REMOTE,
    ("anchor", "same $anchor with different base uri"): _REMOTE,
    ("anyOf", "anyOf with boolean schemas, all false"): _NO_DOC,
    # maxContains needs the elements that fail `contains`: NOT of a number value (every
    # spelling of 1: 1.0, 1e0, ...) is not enforced
    ("maxContains", "maxContains with contains"): "maxContains",
    ("maxContains", "maxContains with contains, value with a decimal"): "maxContains",
    ("maxContains", "minContains < maxContains"): "maxContains",
    ("minContains", "maxContains = minContains"): "maxContains",
    ("minContains", "minContains = 0 with maxContains"): "maxContains",
    ("boolean_schema", "boolean schema 'false'"): _NO_DOC,
    ("defs", "validate definition against metaschema"): _REMOTE,
    ("ref", "remote ref, containing refs itself"): _REMOTE,
    ("ref", "$ref to boolean schema false"): _NO_DOC,
    ("ref", "Recursive references between schemas"): _REMOTE,
    ("ref", "ref creates new scope when adjacent to keywords"): "unevaluatedProperties",
    ("ref", "refs with relative uris and defs"): _REMOTE,
    ("ref", "relative refs with absolute uris and defs"): _REMOTE,
    ("ref", "$id must be resolved against nearest parent, not just immediate parent"): _REMOTE,
    ("ref", "order of evaluation: $id and $ref"): _REMOTE,
    ("ref", "URN ref with nested pointer ref"): _REMOTE,
    ("ref", "ref to if"): _REMOTE,
    ("ref", "ref to then"): _REMOTE,
    ("ref", "ref to else"): _REMOTE,
    ("ref", "ref with absolute-path-reference"): _REMOTE,
    # a remainder automaton of 123456789 states: past the documented multipleOf limit
    ("multipleOf", "float division = inf"): "multipleOf",
}

# (file, group, test) -> why a valid instance is refused (a documented departure)
MISSED = {
    ("type", "integer type matches integers", "a float with zero fractional part is an integer"):
        "integers are written as integers: 1.0 is not produced for type integer",
    ("const", "const with object", "same object with different property order is valid"):
        "enum/const objects keep the key order written in the schema",
    ("vocabulary", "schema that uses custom metaschema with with no validation vocabulary",
     "no validation: invalid number, but it still validates"):
        "custom metaschemas are not read: validation keywords (here minimum) always apply",
}


def _keys(schema) -> set:
    """Every key used anywhere in the schema document."""
    out = set()
    stack = [schema]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            out.update(x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


def _dumps(v, compact: bool, ascii_only: bool = False) -> bytes:
    seps = (",", ":") if compact else (", ", ": ")
    try:
        return json.dumps(v, ensure_ascii=ascii_only, allow_nan=False, separators=seps).encode()
    except UnicodeEncodeError:      # lone surrogate: only the escaped spelling exists
        return json.dumps(v, allow_nan=False, separators=seps).encode()


def _dumps_plain(v, compact: bool) -> bytes:
    """Like _dumps, but every float written as its exact decimal without an exponent (the
    spelling bounded numbers use: 1e-08 -> 0.00000001)."""
    def enc(x) -> str:
        if isinstance(x, float):
            return format(Decimal(repr(x)), "f")
        if isinstance(x, list):
            return "[" + sep.join(enc(y) for y in x) + "]"
        if isinstance(x, dict):
            return "{" + sep.join(json.dumps(k, ensure_ascii=False) + col + enc(y)
                                  for k, y in x.items()) + "}"
        return json.dumps(x, ensure_ascii=False)
    sep, col = (",", ":") if compact else (", ", ": ")
    try:
        return enc(v).encode()
    except UnicodeEncodeError:
        return _dumps(v, compact)


def _accepts(g: Grammar, doc: bytes) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc) and m.is_accepting()


def _groups(files):
    for stem in files:
        for grp in SUITE[stem]:
            yield pytest.param(stem, grp, id=f"{stem}: {grp['description']}")


def _compile(schema, closed=False):
    return Grammar.from_ir(schema_to_ir(schema, closed_objects=closed))


def _check_group(stem, grp):
    g = _compile(grp["schema"])
    for t in grp["tests"]:
        data, key = t["data"], (stem, grp["description"], t["description"])
        candidates = key_orderings(data, grp["schema"], grp["schema"])
        if t["valid"] and _asserted_format_fails(grp["schema"], data):
            # documented departure: the formats we enforce are assertions, not annotations
            for c in [data] + candidates:
                assert not _accepts(g, _dumps(c, True)), (t["description"], c)
            continue
        if t["valid"]:
            if key in MISSED:
                continue
            for compact in (True, False):
                docs = [_dumps(c, compact) for c in candidates] + \
                    [_dumps_plain(c, compact) for c in candidates]
                assert any(_accepts(g, d) for d in docs), (t["description"], docs[:3])
        else:
            for c in [data] + candidates:
                for doc in (_dumps(c, True), _dumps(c, True, True), _dumps_plain(c, True)):
                    assert not _accepts(g, doc), (t["description"], doc)


def _asserted_format_fails(schema, data) -> bool:
    """data is a string that an enforced format of schema (top level) rejects."""
    if not isinstance(schema, dict) or schema.get("format") not in FORMATS or \
            not isinstance(data, str):
        return False
    checker = Draft202012Validator.FORMAT_CHECKER
    return not Draft202012Validator({"format": schema["format"]},
                                    format_checker=checker).is_valid(data)


def _check_refusal(e: CompileError, schema):
    if e.keyword is None:
        assert "no finite JSON document" in str(e)
    else:
        assert e.keyword in _keys(schema), e


@pytest.mark.parametrize("stem,grp", list(_groups(ENFORCED_FILES)))
def test_enforced_keyword_groups(stem, grp):
    key = (stem, grp["description"])
    try:
        _check_group(stem, grp)
    except CompileError as e:
        assert key in SKIPPED, f"unexpected refusal: {e}"
        _check_refusal(e, grp["schema"])
        if SKIPPED[key] in _keys(grp["schema"]):
            assert e.keyword == SKIPPED[key] or e.keyword not in ENFORCED, e
        return
    assert key not in SKIPPED, "group now compiles: remove it from SKIPPED"


OTHER_FILES = [s for s in SUITE if s not in ENFORCED_FILES]


@pytest.mark.parametrize("stem,grp", list(_groups(OTHER_FILES)))
def test_refused_keyword_groups(stem, grp):
    """Files of keywords we refuse: each group raises naming a keyword the schema uses, or
    (when the keyword is a no-op there) compiles and is then exact."""
    try:
        _check_group(stem, grp)
    except CompileError as e:
        _check_refusal(e, grp["schema"])


def test_refusal_names_the_files_keyword():
    """Where a file's keyword is the only one in its group that may be refused, the group
    compiles (and is exact) or the error names that keyword."""
    single = {"uniqueItems": "uniqueItems", "not": "not",
              "oneOf": "oneOf", "allOf": "allOf", "propertyNames": "propertyNames",
              "minProperties": "minProperties",
              "maxProperties": "maxProperties", "dependentRequired": "dependentRequired"}
    checked = compiled = 0
    for stem, kw in single.items():
        for grp in SUITE[stem]:
            if not isinstance(grp["schema"], dict) or kw not in grp["schema"]:
                continue
            if grp["schema"][kw] in (False, True, {}):     # no-op values compile (and are exact)
                continue
            others = _keys(grp["schema"]) - ENFORCED - {kw, "$schema", "$defs", "description"}
            if others & {"minimum", "maximum", "pattern", "not", "oneOf", "allOf", "if", "format"}:
                continue
            try:
                _compile(grp["schema"])
            except CompileError as e:
                if e.keyword == kw:
                    assert e.pointer.endswith("/" + kw)
                    checked += 1
                continue
            compiled += 1       # then exact: test_refused_keyword_groups checks every instance
    # (issue 30: most of the suite's `not` and `oneOf` groups compile now; 2 are refused)
    assert checked >= 2 and checked + compiled >= 30, (checked, compiled)


def test_accepted_fraction_stays_high():
    groups = [(s, grp) for s in ENFORCED_FILES for grp in SUITE[s]]
    compiled = sum(1 for s, grp in groups if (s, grp["description"]) not in SKIPPED)
    assert compiled / len(groups) >= 0.75, (compiled, len(groups))
    assert len(MISSED) <= 3


@pytest.mark.parametrize("stem,grp", list(_groups(["additionalProperties", "properties", "required",
                                                    "ref", "defs", "items", "prefixItems"])))
def test_closed_objects_never_accept_invalid(stem, grp):
    """closed_objects=True only removes documents: invalid instances stay rejected."""
    try:
        g = _compile(grp["schema"], closed=True)
    except CompileError:
        return
    for t in grp["tests"]:
        if not t["valid"]:
            assert not _accepts(g, _dumps(t["data"], True)), t["description"]
