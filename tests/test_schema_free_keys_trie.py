"""The free keys of an open object (json_grammar.string_not_in: an ir.FreeKey rule whose
positions cengine._keytrie makes from the sorted names) against the trie expression the
compiler built before (the oracle tests/oracles/free_key_reference.py): for every names set
of the case table and of a hypothesis property, the same verdict on a set of keys made to
probe the trie (the names, their prefixes and extensions, every other spelling of their
characters, escapes, non-ASCII, broken UTF-8), and the same allowed bytes, acceptance and
completion length at every step of seeded random byte walks. Whole schemas with open objects
are compared the same way."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine import automaton, ir
from cengine.grammar import Grammar
from cengine.schema import json_grammar as jg
from cengine.schema import schema_to_ir
from oracles import free_key_reference
from oracles.free_key_reference import reference_free_keys
from walks import lockstep


def _key_grammars(names):
    """(the key grammar as built now, the oracle's): root is the free-key string alone."""
    out = []
    for fn in (jg.string_not_in, free_key_reference.string_not_in):
        g = ir.GrammarIR()
        g.add("root", ir.NOTHING)
        g.rules["root"].expr = fn(g, list(names))
        out.append(Grammar.from_ir(g))
    return out


def _accepts(g, doc: bytes) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc) and m.is_accepting()


# characters whose every spelling the probes try inside the names
_PROBE_CHARS = ["a", "b", "z", "\"", "\\", "/", "\n", "\x01", "\x7f", "é", "€", "😀", "\u0800"]


def _spellings(ch: str):
    """Every JSON spelling of one character (as bytes): itself, short escape, \\u escapes in
    both cases, a surrogate pair."""
    cp = ord(ch)
    out = set()
    if cp >= 0x20 and ch not in "\"\\" and not 0xD800 <= cp <= 0xDFFF:
        out.add(ch.encode())
    for k, v in jg.SHORT_ESCAPES.items():
        if v == cp:
            out.add(b"\\" + k.encode())
    if cp <= 0xFFFF:
        out.add(b"\\u%04x" % cp)
        out.add(b"\\u%04X" % cp)
    else:
        hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        out.add(b"\\u%04x\\u%04x" % (hi, lo))
    return sorted(out)


def _probes(names):
    """Keys (bytes, quotes included) that probe the trie of names."""
    keys = set()
    for name in list(names) + [""]:
        for i in range(len(name) + 1):
            head = b"".join(jg.canonical_string(c)[1:-1] for c in name[:i])
            keys.add(b'"' + head + b'"')
            # another spelling of the next character, then the rest canonical
            if i < len(name):
                rest = b"".join(jg.canonical_string(c)[1:-1] for c in name[i + 1:])
                for sp in _spellings(name[i]):
                    keys.add(b'"' + head + sp + rest + b'"')
                    keys.add(b'"' + head + sp + b'"')
            for c in _PROBE_CHARS + list(set("".join(names))):
                for sp in _spellings(c):
                    keys.add(b'"' + head + sp + b'"')
                    keys.add(b'"' + head + sp + b'x"')
            # broken UTF-8 and a raw control
            for bad in (b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x1f", b"\\x"):
                keys.add(b'"' + head + bad + b'"')
            keys.add(b'"' + head)
    return sorted(keys)


def _lockstep(new, ref, seed: int, prefer: bytes, walks: int = 30, steps: int = 40):
    """Walk both matchers on the same random allowed bytes (mostly the names' bytes, the
    quote and the backslash); the first disagreement, or None."""
    def pick(allowed, rng):
        liked = [x for x in allowed if x in prefer]
        return rng.choice(liked if liked and rng.random() < 0.8 else list(allowed))
    return lockstep(new, ref, random.Random(seed), pick, walks, steps)


def assert_same_keys(names, seed: int = 0):
    new, ref = _key_grammars(names)
    wrong = [k for k in _probes(names) if _accepts(new, k) != _accepts(ref, k)]
    assert not wrong, wrong[:10]
    prefer = set(b'"\\u') | set(b"".join(jg.canonical_string(n) for n in names))
    assert _lockstep(new, ref, seed, bytes(sorted(prefer))) is None
    return new, ref


CASES = [
    ("one", ["a"]),
    ("shared-prefixes", ["name", "names", "nameless", "nap", "b"]),
    ("prefix-of-another", ["a", "ab", "abc"]),
    ("empty-name", [""]),
    ("empty-and-others", ["", "x", "xy"]),
    ("non-ascii", ["é", "éa", "€uro", "😀", "\u0800", "\uffff", "\U0010ffff", "ß"]),
    ("same-lead-byte", ["é", "è", "ê", "e"]),
    ("must-escape", ["\n", "a\tb", "\x01", "\x1f", "\x7f"]),
    ("quote-and-backslash", ['"', 'a"b', "\\", "a\\", "\\\\"]),
    ("slash", ["/", "a/b"]),
    ("lone-surrogate", ["\ud800", "a\udfff"]),
    ("escape-narrowing", ["a", "\u0061b", "A"]),
    ("every-ascii-child", [chr(c) for c in range(0x20, 0x80)]),
    ("long", ["x" * 300, "x" * 299 + "y"]),
    ("many", [f"prop{i}" for i in range(60)]),
]


@pytest.mark.parametrize("name,names", CASES, ids=[c[0] for c in CASES])
def test_free_keys_match_the_trie_expression(name, names):
    new, _ = assert_same_keys(names, seed=len(name))
    # the case says something: a name is refused, another key taken
    assert not any(_accepts(new, jg.canonical_string(n)) for n in names)
    assert _accepts(new, b'"~~~"')


def test_free_keys_escape_narrowing_is_the_documented_one():
    new, _ = _key_grammars(["ab"])
    assert not _accepts(new, b'"\\u0061b"')        # a name's character escaped in the trie
    assert _accepts(new, b'"\\u0061"') is False     # ... also when it would end off the names
    assert _accepts(new, b'"a\\u0063"')             # an other character's escape leaves it
    assert _accepts(new, b'"c\\u0061b"')            # past the trie any spelling
    assert not _accepts(new, b'"ab"')


def test_free_keys_are_one_rule_per_names_set():
    g = ir.GrammarIR()
    a = jg.string_not_in(g, ["x", "y"])
    assert jg.string_not_in(g, ["y", "x", "y"]) is a
    assert type(g.rules[a.name].expr) is ir.FreeKey
    assert g.rules[a.name].expr.names == ("x", "y")
    # the escape rule depends on the characters the names use only
    b = jg.string_not_in(g, ["yx"])
    assert b != a and g.rules[b.name].expr.escape == g.rules[a.name].expr.escape


_NAME_CHARS = st.sampled_from(["a", "b", "ab", "\"", "\\", "\n", "\x00", "/", "é", "è", "€",
                               "😀", "\ud83d", "u", "0"])
_NAMES = st.lists(st.lists(_NAME_CHARS, max_size=4).map("".join), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NAMES, st.integers(0, 1000))
def test_free_keys_property_random_name_sets(names, seed):
    assert_same_keys(names, seed)


OPEN = {"closed_objects": False, "whitespace_budget": None}


def _schema_grammars(schema, order):
    g = Grammar.from_ir(schema_to_ir(schema, property_order=order, **OPEN))
    with reference_free_keys():
        ref_ir = schema_to_ir(schema, property_order=order, **OPEN)
    assert not any(type(r.expr) is ir.FreeKey for r in ref_ir.rules.values())
    return g, Grammar.from_ir(ref_ir)


SCHEMAS = [
    ("open", {"type": "object", "properties": {"a": {"type": "integer"},
                                               "ab": {"type": "string"}}, "required": ["a"]},
     ['{"a": 1}', '{"a": 1, "ab": "x"}', '{"a": 1, "b": null}', '{"a": 1, "abc": [1]}'],
     ['{"a": 1, "ab": 2}', '{"a": 1, "\\u0061b": 2}', '{"ab": "x"}']),
    ("nested-and-typed-extras", {"type": "object", "properties": {
        "o": {"type": "object", "properties": {"é": {}}, "additionalProperties": {
            "type": "integer"}}}, "additionalProperties": {"type": "boolean"}},
     ['{"o": {"é": 1, "e": 2}}', '{"x": true}'], ['{"o": {"e": "s"}}', '{"x": 1}']),
    ("not-enum-string", {"type": "string", "not": {"enum": ["red", "green"]}},
     ['"blue"', '"re"', '"reds"'], ['"red"', '"green"']),
]


@pytest.mark.parametrize("order", ["declared", "any"])
@pytest.mark.parametrize("name,schema,good,bad", SCHEMAS, ids=[c[0] for c in SCHEMAS])
def test_free_keys_in_schemas(name, schema, good, bad, order):
    new, ref = _schema_grammars(schema, order)
    for doc in good + bad:
        assert _accepts(new, doc.encode()) == _accepts(ref, doc.encode()), doc
    assert all(_accepts(new, d.encode()) for d in good)
    assert not any(_accepts(new, d.encode()) for d in bad)
    prefer = bytes(sorted(set(json.dumps(schema).encode()) | set(b'{}":, ')))
    assert _lockstep(new, ref, len(name), prefer) is None


def test_free_keys_rule_has_its_positions_made_directly():
    g = schema_to_ir(SCHEMAS[0][1], property_order="any", **OPEN)
    a = automaton.build(g, minimize=False)
    # the object's extra member: the key rule that calls `: value` once the key is closed
    # (string_not_in's own rule, which it was made from, is called by nobody then)
    keys = [n for n, r in g.rules.items() if type(r.expr) is ir.FreeKey and n in a.rule_names]
    assert len(keys) == 1
    assert g.rules[keys[0]].expr.rest is not None
    rule = a.rule_names.index(keys[0])
    # one position per trie node (root, a, ab) and its escape byte position-free, plus
    # start, end, the free tail and the UTF-8 tails: far fewer than a subset construction
    # of the expression
    n = int((a.pos_rule == rule).sum())
    assert 0 < n <= 20, n
    assert cengine.compile_json_schema(SCHEMAS[0][1], **OPEN).automaton.n_positions > 0


def _escape_grammars(names):
    """(the escape rule of the names' characters as built now, the oracle's expression):
    root is the escape rule alone (a backslash, an escape, the rest of the string)."""
    used = jg._ranges_of(set("".join(names)))
    out = []
    for expr in (ir.KeyEscape(used, jg.STRING_BODY),
                 ir.seq(jg._escaped_in(jg._minus(ir.negate_ranges(used),
                                                 ((0xD800, 0xDFFF),))), ir.Ref(jg.STRING_BODY))):
        g = ir.GrammarIR()
        g.add("root", ir.Ref("esc"))
        g.add("esc", expr)
        jg.string_body(g)
        out.append(Grammar.from_ir(g))
    return out


def _after(g, prefix: bytes):
    m = g.matcher()
    assert m.accept_bytes(prefix)
    return m


@pytest.mark.parametrize("names", [["abc"], ["a\n\"\\/b"], ["é€", "😀", "\U0010ffff"],
                                   ["\U00010000", "\U0001f600x"], ["\ud83d", "\udc00"]],
                         ids=["ascii", "short-escapes", "non-ascii", "astral", "surrogates"])
def test_key_escape_rule_matches_the_escape_expression(names):
    new, ref = _escape_grammars(names)
    # every short escape letter and every \uXXXX (lower case; upper case for a sample), and
    # the low halves after the high surrogates of the names' astral characters and others
    for b in range(0x20, 0x7F):
        doc = b"\\" + bytes([b]) + b'"'
        assert _accepts(new, doc) == _accepts(ref, doc), doc
    m_new, m_ref = _after(new, b"\\u"), _after(ref, b"\\u")
    for v in range(0x10000):
        for spelled in ([b"%04x" % v, b"%04X" % v] if v % 7 == 0 else [b"%04x" % v]):
            a, b = m_new.copy(), m_ref.copy()
            ok_a = a.accept_bytes(spelled)
            assert ok_a == b.accept_bytes(spelled), spelled
            if ok_a:
                assert a.allowed_bytes() == b.allowed_bytes(), spelled
                c, d = a.copy(), b.copy()
                assert (c.accept_bytes(b'"') and c.is_accepting()) == \
                    (d.accept_bytes(b'"') and d.is_accepting()), spelled
    highs = {0xD800, 0xDBFF, 0xD83D} | {0xD800 + ((ord(c) - 0x10000) >> 10)
                                        for n in names for c in n if ord(c) > 0xFFFF}
    for h in sorted(highs):
        a0, b0 = _after(new, b"\\u%04x\\u" % h), _after(ref, b"\\u%04x\\u" % h)
        for low in range(0xDC00, 0xE000):
            a, b = a0.copy(), b0.copy()
            doc = b"%04x" % low + b'"'
            assert (a.accept_bytes(doc) and a.is_accepting()) == \
                (b.accept_bytes(doc) and b.is_accepting()), (hex(h), hex(low))
    assert _lockstep(new, ref, len(names), b'\\u0123456789abcdefABCDEF"') is None
