"""An enum's strings as one automaton (json_grammar.string_set, cengine._strset): the direct
construction gives the minimal DFA of the set (its language enumerated exactly, its size the
number of distinct futures of the set's prefixes), the same tuples whatever the order or
repeats of the input, and a schema compiled through it accepts exactly what the alternation
of the values' literals accepts (case table and hypothesis over random string sets with
escapes, controls, unicode, lone surrogates and values that are prefixes of each other),
beside non-string values, inside objects and arrays, with the closer and the choice
alternatives working on it."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine import ir
from cengine._strset import string_set_dfa
from cengine.alternatives import value_alternatives
from cengine.schema import json_grammar as jg


def language(edges, accepting):
    """Every string of an acyclic DFA (a finite set), by walking every path."""
    out = set()
    stack = [(0, b"")]
    while stack:
        q, w = stack.pop()
        if accepting[q]:
            out.add(w)
        for lo, hi, t in edges[q]:
            for b in range(lo, hi + 1):
                stack.append((t, w + bytes((b,))))
    return out


def futures(words):
    """The distinct futures {s : p + s in words} over the prefixes p of words: the state
    count of the set's minimal DFA."""
    words = set(words)
    prefixes = {w[:i] for w in words for i in range(len(w) + 1)}
    return len({frozenset(w[len(p):] for w in words if w.startswith(p)) for p in prefixes})


def check_dfa(words):
    got = string_set_dfa(words)
    edges, accepting, longest, size = got
    assert len(edges) == len(accepting)
    if not words:
        assert got == ((), (), float("-inf"), 0)
        return edges, accepting
    assert language(edges, accepting) == set(words)
    assert len(accepting) == futures(words)
    # what it says beside the tuples is what ir measures on them
    plain = ir.Dfa(edges, accepting)
    assert longest == ir.dfa_max_match(plain) == max(map(len, words))
    assert size == ir.dfa_size(plain)
    for row in edges:       # sorted, disjoint, adjacent bytes into one target merged
        for (lo, hi, t), (lo2, hi2, t2) in zip(row, row[1:]):
            assert lo <= hi < lo2 <= hi2
            assert not (hi + 1 == lo2 and t == t2)
    # breadth-first numbering: the same set gives the same tuples in any order, with repeats
    assert string_set_dfa(list(reversed(words)) + words[:3]) == got
    return edges, accepting


CASES = [
    [],
    [b""],
    [b"a"],
    [b"", b"a"],
    [b"a", b"ab", b"abc", b"abd"],               # prefixes of each other
    [b"ab", b"cb", b"db", b"b"],                 # shared suffixes
    [b"abc", b"xbc", b"ab", b"xb"],
    [b"\x00", b"\xff", b"\x00\xff", b"\xff\x00"],
    [bytes((b,)) for b in range(256)],           # one range of every byte into one target
    [b"a1", b"a2", b"a3", b"b1", b"b2", b"b3"],  # equal subtrees merged
    [b"x" * n for n in range(40)],
    [b"same", b"same", b"same"],
    ["Grüße".encode(), "Gr\u00fc".encode(), "\U0001F600".encode(), "\u2603x".encode()],
]


@pytest.mark.parametrize("words", CASES, ids=[repr(c[:3]) for c in CASES])
def test_direct_dfa_is_the_minimal_dfa_of_the_set(words):
    check_dfa(words)


def test_item_codes_share_one_small_automaton():
    words = [f'"item-{k:05d}-{"abcdefghij"[k % 10]}"'.encode() for k in range(10000)]
    edges, accepting = check_dfa(words[:300])
    edges, accepting, _, _ = string_set_dfa(words)
    # quote, "item-", five digits, "-", the letter the last digit fixes, quote: 33 futures
    assert len(accepting) == 33
    assert ir.dfa_max_match(ir.Dfa(edges, accepting)) == max(map(len, words))


@given(st.lists(st.binary(max_size=6), max_size=40))
@settings(max_examples=300, deadline=None)
def test_direct_dfa_random_byte_sets(words):
    check_dfa(words)


# --- through the schema compiler ---------------------------------------------------------

# strings that stress the spelling: quotes, backslashes, controls (short and \\u00XX escapes),
# non-ASCII, astral characters and lone surrogates (only an escaped spelling exists)
TEXT = st.text(alphabet=st.sampled_from(list('ab"\\/\n\t\x00\x1f\x7fé\u2028\u2603\U0001F600') +
                                        ["\ud800", "\udfff"]), max_size=5)


def _with_min(monkeypatch, n):
    monkeypatch.setattr(jg, "STRING_SET_DFA_MIN", n)


def _compile(schema):
    cengine.CACHE.clear()
    return cengine.compile_json_schema(schema, closed_objects=False, whitespace_budget=None)


def probes(values):
    """Spellings to try: each value's canonical one, its prefixes, the ASCII-escaped and
    \\u-escaped forms, one byte changed or added, and the values' own prefixes as strings."""
    out = set()
    for v in values:
        c = jg.canonical_string(v)
        out.add(c)
        out.update(c[:i] for i in range(len(c)))
        out.add(json.dumps(v, ensure_ascii=True).encode())
        if v:
            out.add(b'"' + b"".join(b"\\u%04x" % ord(ch) if ord(ch) < 0x10000 else
                                    ch.encode("utf-8", "surrogatepass") for ch in v) + b'"')
            out.add(jg.canonical_string(v[:-1]))
        out.add(c[:-1] + b'x"')
        out.add(c + b" ")
    return out


def accepted(grammar, texts):
    got = set()
    for t in texts:
        m = grammar.matcher()
        if m.accept_bytes(t) and m.is_accepting():
            got.add(t)
    return got


def same_language(monkeypatch, schema, texts):
    _with_min(monkeypatch, 10 ** 9)
    lit = _compile(schema)
    _with_min(monkeypatch, 1)
    dfa = _compile(schema)
    assert accepted(dfa, texts) == accepted(lit, texts)
    return dfa


@given(st.lists(TEXT, min_size=1, max_size=12))
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_enum_dfa_accepts_what_the_literals_accept(monkeypatch, values):
    texts = probes(values)
    dfa = same_language(monkeypatch, {"enum": values}, texts)
    # and every value's canonical spelling is in it
    assert {jg.canonical_string(v) for v in values} <= accepted(dfa, texts)


def test_string_set_is_the_dfa_from_the_threshold():
    values = [f"v{k}" for k in range(jg.STRING_SET_DFA_MIN)]
    assert type(jg.string_set(values)) is ir.Dfa
    assert type(jg.string_set(values[:-1])) is ir.Alt
    # the compiler takes it only for that many strings, the other values beside it
    g = cengine.schema.schema_to_ir({"enum": values + [1, None]}, closed_objects=False)
    assert any(type(x) is ir.Dfa for r in g.rules.values()
               for x in (r.expr.items if type(r.expr) in (ir.Alt, ir.Seq) else (r.expr,)))


MIXED = ["a", "ab", 'q"', "\\", "é", "\ud800", 1, 1.5, 0, -2, True, False, None,
         [1, "a"], {"k": "a"}, {}, []]


def test_mixed_values_beside_the_strings(monkeypatch):
    texts = probes([v for v in MIXED if isinstance(v, str)]) | {
        b"1", b"1.0", b"1.00", b"1.5", b"1.50", b"0", b"-0", b"-2", b"true", b"false", b"null",
        b'[1,"a"]', b'[ 1 , "a" ]', b'{"k":"a"}', b'{ "k" : "a" }', b"{}", b"[]", b"2", b"nul"}
    same_language(monkeypatch, {"enum": MIXED}, texts)
    same_language(monkeypatch, {"type": "string", "enum": MIXED}, texts)
    same_language(monkeypatch, {"type": ["string", "integer"], "enum": MIXED}, texts)


def test_enums_inside_objects_and_arrays(monkeypatch):
    values = ["red", "green", "blue", "re", 'g"reen']
    docs = {b'{"c": "red", "xs": ["blue", "re"]}', b'{"c": "gree", "xs": []}',
            b'{"c": "green"}', b'{"xs": ["g\\"reen"]}', b'{"c": "red", "xs": ["r"]}',
            b'{"c": "redd"}', b'{"c": "blue", "xs": ["red", "blue", "green"]}'}
    schema = {"type": "object", "properties": {"c": {"enum": values},
                                               "xs": {"type": "array", "items": {"enum": values},
                                                      "maxItems": 3}}}
    dfa = same_language(monkeypatch, schema, docs)
    assert b'{"c": "red", "xs": ["blue", "re"]}' in accepted(dfa, docs)


def test_closer_and_alternatives_on_the_dfa(monkeypatch):
    values = [f"opt-{k}" for k in range(70)] + ["o"]
    _with_min(monkeypatch, 1)
    g = _compile({"type": "object", "properties": {"pick": {"enum": values}},
                  "required": ["pick"]})
    m = g.matcher()
    assert m.accept_bytes(b'{"pick": "opt-1')
    tail = m.completion()
    assert json.loads(b'{"pick": "opt-1' + tail)["pick"] in values
    m = g.matcher()
    assert m.accept_bytes(b'{"pick": ')
    got = value_alternatives(m, max_alternatives=100)
    assert got is not None and sorted(a.value for a in got) == sorted(values)
    assert value_alternatives(m) is None        # more than 64
