"""Key languages and object parts shared across a grammar (cengine/schema/keys.py: one
hash-consed NFA per alphabet, DFA states off the names' trie shared; compiler: one rule per
equal member, extra member, object or array).

Two things per case: every key of a brute-force set gets the schema JSON Schema gives it
(a declared name its property, and the pattern's too if it matches, a key matching the
pattern the pattern's, any other key additionalProperties'), in every object of the
schema; and the grammar has fewer key-language rules than its objects compiled one by one
(the sharing happened)."""
from __future__ import annotations

import itertools
import json
import re

import jsonschema
import pytest

import cengine
from cengine.errors import CompileError
from cengine.schema import pattern_names, schema_to_ir

OPTIONS = dict(closed_objects=False, whitespace_budget=None)

# value schemas that tell the three cases apart: declared names take booleans, pattern keys
# integers, every other key strings
DECLARED, MATCHED, REST = {"type": "boolean"}, {"type": "integer"}, {"type": "string"}
SAMPLES = {"declared": True, "matched": 7, "rest": "s"}


def _object(names, pattern):
    return {"type": "object", "properties": {n: DECLARED for n in names},
            "patternProperties": {pattern: MATCHED}, "additionalProperties": REST}


def _schema(objects):
    """A root object whose members o0, o1, ... are the given objects (declared order)."""
    return {"type": "object", "properties": {f"o{i}": o for i, o in enumerate(objects)},
            "additionalProperties": False}


# the same names beside patterns none of them starts like: below the first character every
# key DFA state on the names' trie is (no pattern state, the same sub-trie) in every object
NAMES_ALIKE = ["tatatax", "xatatax", "ta_"]
PATTERNS_APART = ["^a$", "^b$", "^a_$"]

# (case, objects as (declared names, pattern)); the patterns of a case share tails or repeat
CASES = [
    ("same pattern, other names",
     [(["ta", "tab"], "^t_[ax]+$"), (["t_a", "xa"], "^t_[ax]+$"), ([], "^t_[ax]+$")]),
    ("patterns sharing a tail",
     [(["a"], "^(t_([ax]{1,2}(_x)?))$"), (["ta_"], "^(a_([ax]{1,2}(_x)?))$"),
      (["x"], "^(t_([ax]{1,2}(_x)?))$|^(a_([ax]{1,2}(_x)?))$")]),
    ("a loop after the prefix",
     [(["t"], "^t(_a|x)*$"), (["a_", "t_a"], "^a(_a|x)*$"), (["tx"], "^t(_a|x)*$")]),
    ("repeated objects",
     [(["ab"], "^a"), (["ab"], "^a"), (["b"], "^a")]),
    ("names alike, patterns apart", [(NAMES_ALIKE, p) for p in PATTERNS_APART]),
]

ALPHABET = "ta_x"
KEYS = ["".join(p) for n in range(6) for p in itertools.product(ALPHABET, repeat=n)]


def _expected(names, pattern, key) -> str:
    matched = re.search(pattern, key) is not None
    if key in names:
        # a declared name the pattern matches takes both schemas: boolean and integer
        return "none" if matched else "declared"
    return "matched" if matched else "rest"


def _accepts(g, doc) -> bool:
    m = g.matcher()
    return m.accept_bytes(json.dumps(doc).encode()) and m.is_accepting()


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("case, objects", CASES, ids=[c[0] for c in CASES])
def test_schema_key_sharing_language(case, objects, order):
    g = cengine.Grammar.from_ir(schema_to_ir(
        _schema([_object(n, p) for n, p in objects]), property_order=order, **OPTIONS))
    for i, (names, pattern) in enumerate(objects):
        for key in KEYS:
            want = _expected(names, pattern, key)
            for kind, value in SAMPLES.items():
                doc = {f"o{i}": {key: value}}
                assert _accepts(g, doc) == (kind == want), (case, i, key, kind)


def _key_rules(schema) -> int:
    """Rules of a grammar made for key languages (named <place>-key, <place>-key-<n>)."""
    g = schema_to_ir(schema, property_order="any", **OPTIONS)
    return sum(1 for n in g.rules if re.search(r"-key(-\d+)?$", n))


@pytest.mark.parametrize("case, objects", CASES, ids=[c[0] for c in CASES])
def test_schema_key_sharing_fewer_rules(case, objects):
    together = _key_rules(_schema([_object(n, p) for n, p in objects]))
    alone = sum(_key_rules(_schema([_object(n, p)])) for n, p in objects)
    # one rule per live DFA state of each object's two key languages, when nothing is shared
    assert together < alone, (together, alone)


def test_schema_key_sharing_names_trie():
    """States on the names' trie are shared by objects whose names (below a node) are the
    same: the objects after the first add less than half of the rules they make alone."""
    objects = [(NAMES_ALIKE, p) for p in PATTERNS_APART]
    together = _key_rules(_schema([_object(n, p) for n, p in objects]))
    alone = [_key_rules(_schema([_object(n, p)])) for n, p in objects]
    assert together - alone[0] < sum(alone[1:]) / 2, (together, alone)


# --- the extra keys' alphabet beside patterns ECMA-262 and Python's re read differently ------
# (pattern_names._key_alphabet): every code point but those a construct the pattern uses is
# read differently on. Oracle: jsonschema (Python's re) for every key both readings agree
# on; the engine's own ECMA-262 reading (pattern_names._pattern_matches) shows a refused
# key is one they disagree on.

def _pp(pattern, addl=REST, **more):
    return {"type": "object", "patternProperties": {pattern: MATCHED},
            "additionalProperties": addl, **more}


def _compile(schema):
    return cengine.compile_json_schema(schema, closed_objects=False, property_order="any")


def _accepts_text(g, text: str) -> bool:
    m = g.matcher()
    return m.accept_bytes(text.encode()) and m.is_accepting()


def _spellings(doc, declared=()):
    """The document raw (UTF-8) and with every non-ASCII or control character escaped (not
    when it names a declared property: a declared name is read in its raw spelling only)."""
    raw = json.dumps(doc, ensure_ascii=False)
    return [raw] if any(n in doc for n in declared) else [raw, json.dumps(doc)]


# (schema, document): accepted, and valid by jsonschema
ALPHABET_ACCEPTED = [
    # the narrowing refused these: a non-ASCII key beside `$` and `.`
    ({"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}},
     {"aключ": "s"}),
    ({"type": "object", "patternProperties": {"^x-.*$": {"type": "integer"}},
      "additionalProperties": False}, {"x-ключ": 1}),
    ({"type": "object", "patternProperties": {"^.+$": {"type": "integer"}}}, {"ключ": 1}),
    # code points both readings treat alike, per construct
    (_pp("^a.$"), {"aé": 7}), (_pp("^a.$"), {"a\u0085": 7}), (_pp("^a.$"), {"a😀": 7}),
    (_pp("^a."), {"a\n": "s"}), (_pp("^a.$"), {"a\u2027": 7}),
    (_pp("^abc$"), {"abc\r": "s"}), (_pp("^abc$"), {"é": "s"}),
    (_pp(r"^\d+$"), {"ключ": "s"}), (_pp(r"^\d+$"), {"1٫2": "s"}), (_pp(r"^\D+$"), {"ключ": 7}),
    (_pp(r"^\w+$"), {"a€": "s"}), (_pp(r"^\w+$"), {"a\u2028b": "s"}),
    (_pp(r"^\W$"), {"€": 7}),
    (_pp(r"^a\s$"), {"a\u00a0": 7}), (_pp(r"^a\s$"), {"a\u1680": 7}),
    (_pp(r"^a\s$"), {"a\u3000": 7}), (_pp(r"^a\s$"), {"a\u2028": 7}),
    (_pp(r"^\S+$"), {"ключ": 7}), (_pp(r"^\S+$"), {"a b": "s"}),
    # escaped `.` and `$` are literals in both dialects: nothing excluded beside them
    (_pp(r"^a\.\$"), {"a.$\n": 7}), (_pp(r"^a\.\$"), {"\u2028\r": "s"}),
    # a declared non-ASCII name beside such a pattern (declared names take booleans)
    ({**_pp("^[a-z]+$"), "properties": {"ключ": DECLARED}}, {"ключ": True, "ab": 7}),
    ({**_pp("^a.+$"), "properties": {"ключ": DECLARED}}, {"ключ": True, "b": "s"}),
]


@pytest.mark.parametrize("schema, doc", ALPHABET_ACCEPTED)
def test_key_alphabet_accepts_what_both_readings_agree_on(schema, doc):
    jsonschema.validate(doc, schema)
    g = _compile(schema)
    for text in _spellings(doc, schema.get("properties", ())):
        assert _accepts_text(g, text), text


# (pattern, keys holding a code point the two readings disagree on): refused whatever the
# value, since the key's schema depends on the reading
ALPHABET_REFUSED = [
    ("^a.$", ["a\r", "a\u2028", "a\u2029"]),
    ("^abc$", ["abc\n"]),
    (r"^\d+$", ["١٢", "1٣"]),
    (r"^\D+$", ["a١"]),
    (r"^\w+$", ["é", "aключ", "a١"]),
    (r"^\W$", ["é"]),
    (r"^a\s$", ["a\u0085", "a\ufeff", "a\x1c"]),
    (r"^\S+$", ["\u0085", "a\x1f"]),
]


@pytest.mark.parametrize("pattern, keys", ALPHABET_REFUSED)
def test_key_alphabet_refuses_disagreement(pattern, keys):
    g = _compile(_pp(pattern))
    for key in keys:
        ecma = pattern_names._pattern_matches(pattern, key, "")
        assert ecma != (re.search(pattern, key) is not None), key    # they disagree
        for value in SAMPLES.values():
            for text in _spellings({key: value}):
                assert not _accepts_text(g, text), text


# patterns with every sensitive construct, against jsonschema on every key of up to two
# characters over ASCII, code points the readings agree on and code points they do not
EXACT_PATTERNS = ["^a.$", "^[ab]+$", r"^\d$", r"^a\w", r"\s", r"^\S+$", r"^\W|\D$", "a"]
EXACT_CHARS = "a1 \n\r\"\\é١\u0085\u00a0\u2028\ufeff€\x1c"


@pytest.mark.parametrize("pattern", EXACT_PATTERNS)
def test_key_alphabet_exact(pattern):
    schema = _pp(pattern)
    g = _compile(schema)
    validator = jsonschema.Draft202012Validator(schema)
    allowed = pattern_names._key_alphabet([pattern])
    refused = 0
    for n in range(3):
        for key in map("".join, itertools.product(EXACT_CHARS, repeat=n)):
            inside = pattern_names._in_alphabet(allowed, key)
            refused += not inside
            for value in SAMPLES.values():
                doc = {key: value}
                want = inside and validator.is_valid(doc)
                for text in _spellings(doc):
                    assert _accepts_text(g, text) == want, (pattern, text)
    # every pattern but the plain one excludes something
    assert (refused == 0) == (pattern == "a"), refused


def test_key_alphabet_declared_names():
    # a declared name holding a disagreement code point is refused; one outside the old
    # printable-ASCII alphabet but agreed on compiles, its key excluded from the extra keys
    with pytest.raises(CompileError, match="read it differently"):
        _compile({**_pp(r"^\w+$"), "properties": {"é": DECLARED}})
    with pytest.raises(CompileError, match="read it differently"):
        _compile({**_pp("^a.$"), "properties": {"a\r": DECLARED}})
    g = _compile({**_pp(r"^\w+$"), "properties": {"€x": DECLARED}})
    assert _accepts_text(g, json.dumps({"€x": True}, ensure_ascii=False))
    assert not _accepts_text(g, json.dumps({"€x": "s"}, ensure_ascii=False))
    assert _accepts_text(g, json.dumps({"€y": "s"}, ensure_ascii=False))


def test_key_alphabet_all_of_merge():
    # allOf: a name declared in one branch meets the other branch's pattern (read by
    # _name_matches); a non-ASCII name the readings agree on merges, one they disagree on
    # is refused
    other = {"type": "object", "properties": {"ключ": {"type": "integer"}}}
    schema = {"allOf": [_pp("^[a-z]+$", addl=True), other]}
    g = _compile(schema)
    for doc, ok in (({"ключ": 3, "ab": 7}, True), ({"ключ": "s"}, False),
                    ({"ab": "s"}, False)):
        assert jsonschema.Draft202012Validator(schema).is_valid(doc) == ok
        assert _accepts_text(g, json.dumps(doc, ensure_ascii=False)) == ok, doc
    with pytest.raises(CompileError, match="read it differently"):
        _compile({"allOf": [_pp(r"^\d+$", addl=True),
                            {"type": "object", "properties": {"١": {"type": "integer"}}}]})


# construct -> (pattern, the key holding code point c it is tested on)
CONSTRUCT_PROBES = {".": ("^.$", "{}"), "$": ("^a$", "a{}"), "d": (r"^\d$", "{}"),
                    "w": (r"^\w$", "{}"), "s": (r"^\s$", "{}")}


@pytest.mark.parametrize("construct", sorted(CONSTRUCT_PROBES))
def test_key_alphabet_disagreement_sets(construct):
    """A construct's excluded code points are those ECMA-262 (the engine's reading) and
    Python's re read differently: every excluded range's ends and a spread of the rest."""
    pattern, key = CONSTRUCT_PROBES[construct]
    cut = pattern_names._disagreement(construct)

    def differ(c):
        k = key.format(chr(c))
        return pattern_names._pattern_matches(pattern, k, "") != \
            (re.search(pattern, k) is not None)
    for a, b in cut:
        assert differ(a) and differ(b), (construct, hex(a), hex(b))
    excluded = {c for a, b in cut for c in range(a, b + 1)}
    for c in itertools.chain(range(0, 0x3000), range(0x3000, 0x110000, 61)):
        if not 0xD800 <= c <= 0xDFFF and c not in excluded:
            assert not differ(c), (construct, hex(c))


# Every JSON spelling of an extra key (keys.py, _put_step: the `\uXXXX` escapes of the
# characters from U+0080 on go through a rule per target shared by the DFA's states):
# raw, escaped lower- or upper-case, ASCII letters as `\u0061`, astral characters as
# surrogate pairs, mixed within one key. Oracle: jsonschema on the decoded key; a declared
# name is read in its canonical spelling only (docs/json-schema.md, departure 4).
SPELLING_SCHEMAS = [
    _pp("^a-[a-zé]+$"),
    _pp("^a.$"),
    _pp(r"^\w+$"),
    {**_pp("^a-[a-zé]+$"), "properties": {"é": DECLARED, "ab": DECLARED, "a-€": DECLARED}},
    {**_pp("^[a😀]+$", addl=False), "properties": {"b😀": DECLARED}},
    _pp("^é"),
]
SPELLING_CHARS = "ab-é😀\n€"


def _escape(ch: str, upper: bool) -> str:
    if ord(ch) > 0xFFFF:
        c = ord(ch) - 0x10000
        units = (0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF))
    else:
        units = (ord(ch),)
    out = "".join(f"\\u{u:04x}" for u in units)
    return out.upper().replace("\\U", "\\u") if upper else out


def _key_spellings(key: str):
    """(canonical, spelling) pairs of key (quotes included)."""
    canon = json.dumps(key, ensure_ascii=False)
    yield True, canon
    for upper in (False, True):
        yield key == "", '"' + "".join(_escape(c, upper) for c in key) + '"'
        # every other character escaped, starting with the first or the second
        for first in (0, 1):
            body = "".join(_escape(c, upper) if (i + first) % 2 == 0 else
                           json.dumps(c, ensure_ascii=False)[1:-1] for i, c in enumerate(key))
            yield '"' + body + '"' == canon, '"' + body + '"'


@pytest.mark.parametrize("schema", SPELLING_SCHEMAS, ids=range(len(SPELLING_SCHEMAS)))
def test_key_spellings_exact(schema):
    g = _compile(schema)
    validator = jsonschema.Draft202012Validator(schema)
    allowed = pattern_names._key_alphabet(list(schema["patternProperties"]))
    declared = schema.get("properties", {})
    seen = 0
    for n in range(3):
        for key in map("".join, itertools.product(SPELLING_CHARS, repeat=n)):
            for value in SAMPLES.values():
                valid = pattern_names._in_alphabet(allowed, key) and \
                    validator.is_valid({key: value})
                for canonical, spelled in _key_spellings(key):
                    want = valid and (canonical or key not in declared)
                    assert _accepts_text(g, "{" + spelled + ": " + json.dumps(value) + "}") \
                        == want, (schema, spelled, value)
                    seen += want
    assert seen


def test_key_wide_escapes_shared():
    """The `\\uXXXX` digits of the characters from U+0080 on are one rule per target: beside
    an ASCII pattern every state of the other keys' language (on the names' trie and off it)
    sends them to "any key from here on", and the pattern's language refuses them."""
    names = ["alpha", "beta", "gamma", "name_x", "title"]
    schema = {**_pp("^name_[a-z]{2,3}(-[A-Z]{2})?$"),
              "properties": {n: DECLARED for n in names}}
    g = schema_to_ir(schema, **OPTIONS)
    wide = [r for r in g.rules if r.endswith("-wide-escape")]
    key_states = [r for r in g.rules if "-key" in r and not r.endswith("-wide-escape")]
    assert len(wide) == 1 and len(key_states) > 20, (wide, len(key_states))
    # and the language is whole: an escaped non-ASCII key, a name's prefix going on
    c = _compile(schema)
    for text, ok in (('{"\\u00e9": "s"}', True), ('{"alph\\u00E9": "s"}', True),
                     ('{"name_ab\\ud83d\\ude00": "s"}', True), ('{"name_ab": 7}', True),
                     ('{"name_ab\\u00e9": 7}', False), ('{"alpha": true}', True)):
        assert _accepts_text(c, text) == ok, text
