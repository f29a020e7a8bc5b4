"""The free keys of an open object as the schema compiler built them before the builder made
their positions directly (a test oracle): json_grammar.string_not_in of that time, a trie
expression over code points walked in Python (an Alt per node of the names' trie, a Seq per
child, the characters that leave the trie and the shared escape rule in every node), which
the builder determinizes like any expression. Verbatim but for the module it reads the JSON
pieces from; `reference_free_keys()` puts it in place of the compiler's.

It is the language ir.FreeKey (cengine._keytrie) must keep, including the narrowing on
escaped spellings while a key is still a prefix of a name."""
from __future__ import annotations

import contextlib
import functools
from typing import Dict, Sequence, Tuple

from cengine import ir
from cengine.schema import json_grammar as jg
from cengine.schema.json_grammar import (STRING_BODY, _SURR_HI, _SURR_LO, _escaped_in,
                                         _intersect, _literal_in, _minus, alt,
                                         canonical_string, string, string_body)

_STRING_BODY_REF = ir.Ref(STRING_BODY)


@contextlib.contextmanager
def reference_free_keys():
    """Schemas compiled inside the block make their free keys the old way (an open object's
    too: its extra keys are the old key expression at once, not a jg.FreeKeys)."""
    fn, keys = jg.string_not_in, jg.free_keys
    jg.string_not_in = jg.free_keys = string_not_in
    try:
        yield
    finally:
        jg.string_not_in, jg.free_keys = fn, keys


@functools.lru_cache(maxsize=4096)
def _ascii_leaving(kids: Tuple[int, ...]) -> ir.Expr:
    """The ASCII characters other than `kids`, as themselves in a string."""
    return _literal_in(_minus(((0, 0x7F),), tuple((k, k) for k in kids)))


@functools.lru_cache(maxsize=4096)
def _ascii_leaving_rest(kids: Tuple[int, ...]) -> ir.Expr:
    """_ascii_leaving(kids), then the rest of the string (the body rule)."""
    return ir.seq(_ascii_leaving(kids), ir.Ref(STRING_BODY))


@functools.lru_cache(maxsize=4096)
def _spelling(k: int) -> ir.Bytes:
    """The one spelling of a name's character inside the trie: the declared keys' own."""
    return ir.lit(canonical_string(chr(k))[1:-1])


@functools.lru_cache(maxsize=4096)
def _leaving_head(kids: Tuple[int, ...], is_end: bool) -> tuple:
    """The options leaving a trie node with these children (ASCII ones) that do not depend
    on the names (the closing quote unless a name ends there, the other ASCII characters),
    and whether alt() would keep them as they are."""
    head = (_ascii_leaving_rest(kids),) if is_end else (ir.lit('"'), _ascii_leaving_rest(kids))
    return head, not any(type(o) is ir.Alt or type(o) is ir.Nothing for o in head)


# What string_not_in builds from the set of characters the names use, whatever the names:
# memoised across compiles (bounded LRU keyed on that set, which is all it depends on; the
# expressions are immutable and the rule it names has the same expression in every grammar).
@functools.lru_cache(maxsize=256)
def _free_key_parts(used: ir.Ranges) -> tuple:
    body = ir.Ref(STRING_BODY)
    others = _minus(ir.negate_ranges(used), ((_SURR_LO, _SURR_HI),))
    # any escape of a character no name contains, then the rest of the string: a rule (named
    # as the compiler names its ir.KeyEscape of the same characters)
    esc_rule = (jg._free_key_escape(used)[0], ir.seq(_escaped_in(others), body))
    # non-ASCII characters no name contains stay in each node (a few positions): plain
    # characters must be the node's own, or the mask could not prove a slice of plain runs
    wide_out = ir.seq(_literal_in(_intersect(others, 0x80, ir.MAX_UNICODE)), body)
    used_wide = _intersect(used, 0x80, ir.MAX_UNICODE)
    # names' characters whose only spelling is an escape (a quote, a backslash, a control)
    must_escape = tuple(k for a, b in used if a < 0x20 or a <= 0x22 <= b or a <= 0x5C <= b
                        for k in range(a, min(b, 0x5C) + 1) if k < 0x20 or k in (0x22, 0x5C))
    return esc_rule, wide_out, used_wide, must_escape


def string_not_in(g: ir.GrammarIR, names: Sequence[str]) -> ir.Expr:
    """A JSON string (with quotes) whose decoded value is none of `names`.

    Walks the trie of the names over code points: at each node, a character that leaves the
    trie frees the rest of the string; closing the quote is allowed unless the node is a name.
    While a key is still a prefix of a name, the characters that occur in the names are
    written as themselves (escaped only where JSON requires it): their other spellings
    (`\\u0061` for `a`) are refused there, a documented narrowing. The escapes of every other
    character leave the trie through one rule shared by all the trie's nodes, so a node no
    longer carries a copy of the whole escape grammar.
    """
    if not names:
        return string(g)
    # the expression depends on the set of names alone (and the grammar's shared rules):
    # objects that declare the same names in any order (a protocol's messages) share one
    memo = g.memo("string_not_in")
    key = frozenset(names)
    out = memo.get(key)
    if out is None:
        string_body(g)
        esc_name, esc_expr, out = _free_key_trie(tuple(names))
        if esc_name not in g.rules:
            g.add(esc_name, esc_expr)
        memo[key] = out
    return out


# The trie expression of a name list, with the escape rule it calls: memoised across compiles
# (bounded LRU keyed on the names, all it depends on; immutable expressions). The same names
# recur within a schema and across similar ones: on the MaskBench corpus in name order half
# the calls hit (16% within a schema), 41% of the characters. A few hundred entries hold
# nearly all of that: every entry stays in the collector's long-lived heap.
@functools.lru_cache(maxsize=256)
def _free_key_trie(names: Tuple[str, ...]) -> tuple:
    # the trie: node -> {code point: node}; the nodes where a name ends, by identity
    trie: Dict = {}
    ends = set()
    for name in names:
        node = trie
        for ch in name:
            node = node.setdefault(ord(ch), {})
        ends.add(id(node))
    body = _STRING_BODY_REF
    used = jg._ranges_of(set("".join(names)))
    (esc_name, esc_expr), wide_out, used_wide, must_escape = _free_key_parts(used)
    esc_out = ir.Ref(esc_name)
    quote = ir.lit('"')
    # what leaves the trie at a node depends only on the node's children (and whether a name
    # ends there): most nodes are single-child links or leaves, so it is built once per set
    leaving: Dict = {}
    # without non-ASCII or must-escape characters in the names (the usual case) a node's
    # options are a head that depends only on its ASCII children (memoised across compiles)
    # and the same two calls for every node
    simple = not used_wide and not must_escape
    tail_plain = type(wide_out) is not ir.Alt and type(wide_out) is not ir.Nothing

    def leave(kids: tuple, is_end: bool) -> tuple:
        opts = []
        if not is_end:
            opts.append(quote)
        # ASCII characters that leave the trie here, as themselves
        opts.append(_ascii_leaving_rest(tuple(k for k in kids if k < 0x80)))
        # names' non-ASCII characters that are not kids here leave it too
        if used_wide:
            wide_used = _minus(used_wide, tuple((k, k) for k in kids))
            if wide_used:
                opts.append(ir.seq(_literal_in(wide_used), body))
        opts.append(wide_out)
        opts.append(esc_out)
        # names' characters in escaped spelling that are not kids here leave the trie
        # only when JSON requires the escape
        for k in must_escape:
            if k not in kids:
                opts.append(ir.seq(_spelling(k), body))
        # what alt() would make of them, checked once per set: the node then builds its
        # Alt directly (the options and the children's branches are pairwise different:
        # different first bytes)
        plain = not any(type(o) is ir.Alt or type(o) is ir.Nothing for o in opts)
        out = leaving[(kids, is_end)] = (opts, plain)
        return out

    Alt, Seq = ir.Alt, ir.Seq
    tail2 = (wide_out, esc_out)
    # per (children, name ends here): the node's own options as a tuple, and whether alt()
    # would keep them and the branches as they are (then the node is their Alt directly)
    heads: Dict = {}

    def walk(node) -> ir.Expr:
        kids = tuple(node) if len(node) < 2 else tuple(sorted(node))
        key = (kids, id(node) in ends)
        pre = heads.get(key)
        if pre is None:
            if simple:
                head, plain = _leaving_head(*key)
                pre = (head + tail2, plain and tail_plain)
            else:
                opts, plain = leaving.get(key) or leave(*key)
                pre = (tuple(opts), plain)
            heads[key] = pre
        opts, plain = pre
        if kids:
            branches = []
            for k in kids:
                sub = walk(node[k])
                # ir.seq of a literal and an Alt is their Seq
                sp = _spelling(k)
                branches.append(Seq((sp, sub)) if type(sub) is Alt else ir.seq(sp, sub))
            opts = opts + tuple(branches)
        if plain and len(opts) > 1:
            return Alt(opts)
        return alt(*opts)

    out = ir.seq(quote, walk(trie))
    # walk's closure holds walk itself: unbound, the trie is not left to the cyclic collector
    walk = None
    return esc_name, esc_expr, out
