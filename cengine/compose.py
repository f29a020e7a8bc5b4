"""Grammar composition: one output assembled from literal text, JSON Schemas, GBNF grammars and
regexes, compiled onto one automaton so that the closer's promise holds across the whole.

In the spirit of xgrammar's structural tags. A description is built from small immutable
parts and compiled once (cached by its structured source):

    Text(s)                          the literal s
    JsonSchema(schema)               one instance of the schema (no surrounding whitespace)
    Gbnf(text, root="root")          one sentence of the grammar
    Regex(pattern)                   one string matching the whole pattern
    Concat(a, b, ...)                a then b then ...
    OneOf(a, b, ...)                 exactly one of them
    Repeat(a, min, max, separator)   a, min..max times, separated by `separator`
    Tagged(begin, content, end)      begin, content, end (a plain string stands for Text)
    TriggeredRegion(trigger, region, end, repeat=False, separator="")
        free text until `trigger`, then `region`, then `end`; with repeat=True further
        `separator trigger region end` blocks may follow (and nothing else)
    AnyText()                        any text; as a Tagged content, any text without its end
    TriggeredTags(triggers, tags, at_least_one=False, stop_after_first=False)
        free text in which every occurrence of a trigger opens one of the Tagged `tags` whose
        begin starts with it; free text again after the tag's end (xgrammar's triggered_tags,
        enforced inside the automaton, not by the decode loop)
    Special(text)                    the model's special token of that text, as that token
                                     alone (never the text in ordinary tokens); a matcher
                                     needs a vocabulary from Vocabulary.with_special_tokens()
                                     (cengine/special.py). Also a TriggeredRegion's trigger.

`compile_structural(part)` is the grammar of the whole output being `part` (for a
TriggeredRegion: a region from the first byte, no free text). `compile_triggered(region)` is
the lazy form for a decode loop: `(trigger, grammar of what follows the trigger)`; the loop
runs free until the output contains the trigger, then feeds the bytes after it to a matcher
of that grammar, whose completion() closes the open region and its end string. Anything the
parts cannot enforce raises CompileError at compile time, as the single front ends do.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, NamedTuple, Optional, Tuple, Union

from . import ir
from .automaton import CompileBudget, budget_scope
from .errors import CompileError
from .grammar import CACHE, Grammar
from .special import has_marks, special_bytes

__all__ = ["Part", "Text", "Special", "JsonSchema", "Gbnf", "Regex", "Concat", "OneOf", "Repeat",
           "Tagged", "TriggeredRegion", "TriggeredGrammar", "AnyText", "TriggeredTags",
           "compile_structural", "compile_triggered"]


class Part:
    """A piece of a composed output. Immutable; equal parts have equal `key`s."""

    __slots__ = ("key",)
    key: tuple

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, **values) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key[1:]!r}"

    def _expr(self, b: "_Builder") -> ir.Expr:      # pragma: no cover - every part defines it
        raise NotImplementedError


PartLike = Union[Part, str]


def _part(x: Any, where: str) -> Part:
    if isinstance(x, Part):
        return x
    if isinstance(x, str):
        return Text(x)
    raise TypeError(f"{where} must be a cengine composition part or a string, "
                    f"not {type(x).__name__}")


def _string(x: Any, where: str) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{where} must be a string, not {type(x).__name__}")
    return x


class Text(Part):
    """The literal text (UTF-8)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self._set(text=_string(text, "Text"), key=("text", text))

    def _expr(self, b):
        return ir.lit(self.text)


class Special(Part):
    """The model's special token whose text is `text`, matched by that token alone: its bytes
    are the marked spelling (cengine/special.py) that only a vocabulary prepared with
    Vocabulary.with_special_tokens() gives it. A vocabulary without such a token can never
    match it; whoever composes decides, from the vocabulary, between Special and Text."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        if not _string(text, "Special"):
            raise CompileError("a special token's text must not be empty")
        self._set(text=text, key=("special", text))

    def _expr(self, b):
        return ir.lit(special_bytes(self.text))


class JsonSchema(Part):
    """One instance of a JSON Schema (dict, bool or JSON text), compiled as compile_json_schema
    compiles it, without the whitespace around the document. Properties keep their declared
    order, so the key is the JSON text as given (never sorted). The schema is copied: changing
    the caller's dict afterwards changes nothing here. property_order as for
    compile_json_schema."""

    __slots__ = ("schema", "closed_objects", "property_order")

    def __init__(self, schema: Union[dict, bool, str], *, closed_objects: bool = True,
                 property_order: str = "declared"):
        from .schema.compiler import check_property_order
        check_property_order(property_order)
        if isinstance(schema, (str, bytes)):
            try:
                schema = json.loads(schema)
            except ValueError as e:
                raise CompileError(f"schema is not valid JSON: {e}", pointer="") from None
        if not isinstance(schema, (dict, bool)):
            raise CompileError(f"a JSON Schema is an object or a boolean, not "
                               f"{type(schema).__name__}", pointer="")
        try:
            text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise CompileError(f"schema is not JSON: {e}", pointer="") from None
        self._set(schema=json.loads(text), closed_objects=bool(closed_objects),
                  property_order=property_order,
                  key=("json_schema", text, bool(closed_objects), property_order))

    def _expr(self, b):
        from .schema import add_schema
        return add_schema(b.g, self.schema, prefix=b.prefix("schema"),
                          closed_objects=self.closed_objects, property_order=self.property_order)


class Gbnf(Part):
    """One sentence of a llama.cpp GBNF grammar (its rules are renamed apart from the rest)."""

    __slots__ = ("text", "root")

    def __init__(self, text: str, root: str = "root"):
        self._set(text=_string(text, "Gbnf text"), root=_string(root, "Gbnf root"),
                  key=("gbnf", text, root))

    def _expr(self, b):
        from .gbnf import parse_gbnf
        sub = parse_gbnf(self.text, root=self.root)
        prefix = b.prefix("gbnf")
        names = {name: prefix + name for name in sub.rules}
        for name, rule in sub.rules.items():
            b.g.add(names[name], _renamed(rule.expr, names), container=rule.container,
                    whitespace=rule.whitespace, origin=rule.origin)
        return ir.Ref(names[sub.root])


class Regex(Part):
    """One string matching the whole pattern (compile_regex's syntax)."""

    __slots__ = ("pattern",)

    def __init__(self, pattern: str):
        self._set(pattern=_string(pattern, "Regex pattern"), key=("regex", pattern))

    def _expr(self, b):
        from .regex import regex_to_expr
        return regex_to_expr(self.pattern, anchored=True)


class Concat(Part):
    """The parts one after the other."""

    __slots__ = ("parts",)

    def __init__(self, *parts: PartLike):
        ps = tuple(_part(p, "a Concat item") for p in parts)
        self._set(parts=ps, key=("concat",) + tuple(p.key for p in ps))

    def _expr(self, b):
        return ir.seq(*(b.expr(p) for p in self.parts))


class OneOf(Part):
    """Exactly one of the parts (at least one part is needed)."""

    __slots__ = ("parts",)

    def __init__(self, *parts: PartLike):
        if not parts:
            raise CompileError("OneOf needs at least one alternative")
        ps = tuple(_part(p, "a OneOf alternative") for p in parts)
        self._set(parts=ps, key=("one_of",) + tuple(p.key for p in ps))

    def _expr(self, b):
        if len(self.parts) == 1:
            return b.expr(self.parts[0])
        return b.rule("one-of", ir.alt(*(b.expr(p) for p in self.parts)))


class Repeat(Part):
    """`part` between `min` and `max` times (max None: unbounded), `separator` between two."""

    __slots__ = ("part", "min", "max", "separator")

    def __init__(self, part: PartLike, min: int = 0, max: Optional[int] = None,
                 separator: PartLike = ""):
        for name, v in (("min", min), ("max", max)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise CompileError(f"Repeat {name} must be a non-negative integer, not {v!r}")
        if max is not None and max < min:
            raise CompileError(f"Repeat max ({max}) is below min ({min})")
        p, sep = _part(part, "the repeated part"), _part(separator, "the separator")
        self._set(part=p, min=min, max=max, separator=sep,
                  key=("repeat", p.key, min, max, sep.key))

    def _expr(self, b):
        if self.max == 0:
            return ir.EMPTY
        item = b.rule("item", b.expr(self.part))
        sep = b.expr(self.separator)
        more = ir.repeat(ir.seq(sep, item), max(self.min - 1, 0),
                         None if self.max is None else self.max - 1)
        body = ir.seq(item, more)
        return body if self.min > 0 else ir.opt(body)


class Tagged(Part):
    """`begin`, then `content`, then `end`: one member of a union of tagged schemas."""

    __slots__ = ("begin", "content", "end")

    def __init__(self, begin: str, content: PartLike, end: str):
        c = _part(content, "Tagged content")
        self._set(begin=_string(begin, "Tagged begin"), content=c, end=_string(end, "Tagged end"),
                  key=("tagged", begin, c.key, end))

    def _expr(self, b):
        if isinstance(self.content, AnyText) and self.end:
            # any text up to the first occurrence of the end, which closes the tag
            until = _scan_dfas([self.end.encode("utf-8")])[1][0]
            return ir.seq(ir.lit(self.begin), b.rule("any-text", until))
        return ir.seq(ir.lit(self.begin), b.expr(self.content), ir.lit(self.end))


class AnyText(Part):
    """Any text at all. As the content of a Tagged, any text without the tag's end, which
    then closes the tag (the only way the end can be found)."""

    __slots__ = ()

    def __init__(self) -> None:
        self._set(key=("any_text",))

    def _expr(self, b):
        return b.rule("any-text", _scan_dfas([])[0])


class TriggeredTags(Part):
    """Free text in which every occurrence of a trigger opens a tag: from the trigger on, the
    text is one of `tags` whose begin starts with that trigger, and after the tag's end free
    text goes on. `at_least_one`: a tag must come; `stop_after_first`: nothing follows the
    first tag (xgrammar's triggered_tags). The free text is an automaton that watches for the
    triggers (Aho-Corasick), so a trigger can never be written without its tag."""

    __slots__ = ("triggers", "tags", "at_least_one", "stop_after_first")

    def __init__(self, triggers: Any, tags: Any, *, at_least_one: bool = False,
                 stop_after_first: bool = False):
        trig = tuple(_string(t, "a trigger") for t in triggers)
        if not trig or any(not t for t in trig):
            raise CompileError("TriggeredTags needs at least one trigger, none of them empty")
        if len(set(trig)) != len(trig):
            raise CompileError("TriggeredTags: a trigger is given twice")
        tg = tuple(tags)
        if not tg or any(not isinstance(t, Tagged) for t in tg):
            raise CompileError("TriggeredTags needs at least one tag, each a Tagged")
        for t in tg:
            if not any(t.begin.startswith(x) for x in trig):
                raise CompileError(f"TriggeredTags: the tag begin {t.begin!r} starts with none "
                                   f"of the triggers {list(trig)}")
        self._set(triggers=trig, tags=tg, at_least_one=bool(at_least_one),
                  stop_after_first=bool(stop_after_first),
                  key=("triggered_tags", trig, tuple(t.key for t in tg), bool(at_least_one),
                       bool(stop_after_first)))

    def _expr(self, b):
        free, until = _scan_dfas([t.encode("utf-8") for t in self.triggers])
        blocks = []
        for trigger, dfa in zip(self.triggers, until):
            # each tag opened by this trigger: the tag's begin past the trigger, its content,
            # its end (a begin that starts with two triggers belongs to the shorter: the text
            # watcher stops where it ends)
            mine = [t for t in self.tags if min((x for x in self.triggers
                                                 if t.begin.startswith(x)), key=len) == trigger]
            if not mine:
                continue
            rest = [b.expr(Tagged(t.begin[len(trigger):], t.content, t.end)) for t in mine]
            blocks.append(ir.seq(b.rule("until-trigger", dfa), ir.alt(*rest)))
        block = b.rule("tag", ir.alt(*blocks))
        tail = b.rule("free-text", free)
        if self.stop_after_first:
            return block if self.at_least_one else ir.alt(block, tail)
        return ir.seq(ir.repeat(block, 1 if self.at_least_one else 0, None), tail)


def _utf8_table() -> list:
    """UTF-8's byte automaton, from the byte-range sequences cengine/utf8.py spells it with:
    state -> byte -> next state or None; state 0 is between characters, each other state
    the byte ranges a character still owes."""
    from .utf8 import sequences
    index: dict = {(): 0}
    table: list = [[None] * 256]

    def state(owed: tuple) -> int:
        if owed not in index:
            q = index[owed] = len(table)
            table.append([None] * 256)
            nxt = state(owed[1:])
            for c in range(owed[0][0], owed[0][1] + 1):
                table[q][c] = nxt
        return index[owed]
    for seq in sequences(0, 0x10FFFF):
        nxt = state(tuple(map(tuple, seq[1:])))
        for c in range(seq[0][0], seq[0][1] + 1):
            table[0][c] = nxt
    return table


_UTF8 = _utf8_table()


def _scan_dfas(strings: list) -> Tuple[ir.Dfa, list]:
    """Byte automata over UTF-8 text that watches for `strings` (Aho-Corasick): the first
    accepts any text in which none of them occurs; the k-th of the list accepts the texts
    whose first occurrence of any of them is one of strings[k], ending there."""
    goto: list = [{}]          # the trie of the strings
    ends: list = [set()]       # state -> indexes of the strings that end there (by suffix)
    for k, s in enumerate(strings):
        q = 0
        for c in s:
            if c not in goto[q]:
                goto[q][c] = len(goto)
                goto.append({})
                ends.append(set())
            q = goto[q][c]
        ends[q].add(k)
    fail = [0] * len(goto)
    order, delta = [0], [[0] * 256 for _ in goto]
    for q in order:            # breadth first: a state's failure link is done before it
        for c in range(256):
            if c in goto[q]:
                r = goto[q][c]
                fail[r] = delta[fail[q]][c] if q else 0
                ends[r] |= ends[fail[r]]
                delta[q][c] = r
                order.append(r)
            else:
                delta[q][c] = delta[fail[q]][c] if q else 0

    def dfa(found: Optional[int]) -> ir.Dfa:
        # the watcher times UTF-8's own automaton (the text stays valid UTF-8): states are
        # (watcher state, UTF-8 state); where a string ends, the one watched for leads to an
        # accepting sink and any other is dead
        index = {(0, 0): 0}
        order = [(0, 0)]
        edges: list = []
        for q, u in order:
            ranges: list = []
            for c in range(256):
                v = _UTF8[u][c]
                if v is None:
                    continue
                r = delta[q][c]
                t: int
                if ends[r]:
                    if found is None or found not in ends[r]:
                        continue
                    t = -1                      # the sink, numbered once every live state is
                elif (r, v) in index:
                    t = index[(r, v)]
                else:
                    t = index[(r, v)] = len(order)
                    order.append((r, v))
                if ranges and ranges[-1][2] == t and ranges[-1][1] == c - 1:
                    ranges[-1] = (ranges[-1][0], c, t)
                else:
                    ranges.append((c, c, t))
            edges.append(ranges)
        n = len(order)
        edges = [tuple((lo, hi, n if t < 0 else t) for lo, hi, t in e) for e in edges]
        accepting = [found is None and u == 0 for _, u in order]
        if found is not None:
            edges.append(())
            accepting.append(True)
        return ir.Dfa(tuple(edges), tuple(accepting))

    return dfa(None), [dfa(k) for k in range(len(strings))]


class TriggeredRegion(Part):
    """Free text until `trigger`, then `region`, then `end`; with repeat=True more
    `separator trigger region end` blocks may follow. Nothing follows the last block."""

    __slots__ = ("trigger", "region", "end", "repeat", "separator")

    def __init__(self, trigger: PartLike, region: PartLike, end: PartLike, *,
                 repeat: bool = False, separator: PartLike = ""):
        if isinstance(trigger, Text):
            trigger = trigger.text
        if isinstance(trigger, Part):
            # special tokens and text (a Special, or a Concat of Specials and Texts): fixed bytes
            if not _fixed_bytes(trigger):
                raise CompileError("the trigger of a TriggeredRegion must be text or special "
                                   "tokens and must not be empty")
            tkey = trigger.key
        elif not _string(trigger, "the trigger"):
            raise CompileError("the trigger of a TriggeredRegion must not be empty")
        else:
            tkey = trigger
        r, sep = _part(region, "the region"), _part(separator, "the separator")
        e = end if isinstance(end, Part) else _string(end, "the end string")
        ekey = e.key if isinstance(e, Part) else e
        self._set(trigger=trigger, region=r, end=e, repeat=bool(repeat), separator=sep,
                  key=("triggered", tkey, r.key, ekey, bool(repeat), sep.key))

    @property
    def trigger_bytes(self) -> bytes:
        """What the decode loop looks for in the matcher's bytes (marked for a Special)."""
        if isinstance(self.trigger, Part):
            return _fixed_bytes(self.trigger)
        return self.trigger.encode("utf-8")

    def _lit(self, b, x) -> ir.Expr:
        return b.expr(x) if isinstance(x, Part) else ir.lit(x)

    def _after_trigger(self, b) -> ir.Expr:
        """region end (separator trigger region end)*: what follows the first trigger."""
        end = self._lit(b, self.end)
        if not self.repeat:
            return ir.seq(b.expr(self.region), end)
        region = b.rule("region", b.expr(self.region))
        block = ir.seq(region, end)
        more = ir.seq(b.expr(self.separator), self._lit(b, self.trigger), region, end)
        return ir.seq(block, ir.repeat(more, 0, None))

    def _expr(self, b):
        return ir.seq(self._lit(b, self.trigger), self._after_trigger(b))


def _fixed_bytes(part: Part) -> Optional[bytes]:
    """The bytes of a part made of Text, Special and Concat alone (None for anything else)."""
    if isinstance(part, Text):
        return part.text.encode("utf-8")
    if isinstance(part, Special):
        return special_bytes(part.text)
    if isinstance(part, Concat):
        pieces = [_fixed_bytes(p) for p in part.parts]
        return None if any(p is None for p in pieces) else b"".join(pieces)
    return None


class TriggeredGrammar(NamedTuple):
    """The lazy form of a TriggeredRegion; unpacks as `(trigger, grammar)`. `trigger` is the
    text, or for a Special trigger its marked bytes (what the matcher's vocabulary spells)."""
    trigger: Union[str, bytes]
    grammar: Grammar


# --- compiling ------------------------------------------------------------------------------

ROOT = "composed"


class _Builder:
    def __init__(self, whitespace_budget: Optional[int], max_depth: int):
        self.g = ir.GrammarIR(root=ROOT, max_depth=max_depth, whitespace_budget=whitespace_budget)
        self._n = 0

    def prefix(self, kind: str) -> str:
        # ':' appears in no rule name of the front ends, so these never collide with theirs
        self._n += 1
        return f"{kind}{self._n}:"

    def expr(self, part: Part) -> ir.Expr:
        return part._expr(self)

    def rule(self, base: str, expr: ir.Expr) -> ir.Expr:
        """`expr` as a rule of its own (when it is more than a reference or a literal), so an
        expression used in several places is compiled once."""
        if isinstance(expr, (ir.Ref, ir.Bytes, ir.Nothing)):
            return expr
        return self.g.add(self.g.fresh_name(self.prefix(base)), expr)

    def finish(self, root: ir.Expr, what: str) -> ir.GrammarIR:
        self.g.add(ROOT, root)
        if ROOT not in ir.productive_rules(self.g):
            raise CompileError(f"the composed {what} accepts no document (an alternative-free "
                               f"union, a false schema, or an impossible part)")
        return self.g


def _renamed(e: ir.Expr, names: dict) -> ir.Expr:
    if isinstance(e, ir.Ref):
        return ir.Ref(names[e.name])
    if isinstance(e, ir.Seq):
        return ir.Seq(tuple(_renamed(x, names) for x in e.items))
    if isinstance(e, ir.Alt):
        return ir.Alt(tuple(_renamed(x, names) for x in e.items))
    if isinstance(e, ir.Repeat):
        return ir.Repeat(_renamed(e.item, names), e.lo, e.hi)
    if isinstance(e, ir.AnyOrder):
        return dataclasses.replace(e, members=tuple(names[m] for m in e.members),
                                   extra=None if e.extra is None else names[e.extra])
    if isinstance(e, ir.FreeKey):
        return dataclasses.replace(e, body=names[e.body], escape=names[e.escape],
                                   rest=None if e.rest is None else names[e.rest])
    if isinstance(e, ir.KeyEscape):
        return dataclasses.replace(e, body=names[e.body])
    return e


def _options(whitespace_budget: Optional[int], max_depth: int) -> Tuple[Optional[int], int]:
    if whitespace_budget is not None and (isinstance(whitespace_budget, bool)
                                          or not isinstance(whitespace_budget, int)
                                          or whitespace_budget < 0):
        raise CompileError(f"whitespace_budget must be None or a non-negative integer, "
                           f"not {whitespace_budget!r}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise CompileError(f"max_depth must be a positive integer, not {max_depth!r}")
    return whitespace_budget, max_depth


def compile_structural(part: PartLike, *, whitespace_budget: Optional[int] = 64,
                       max_depth: int = 64, budget: Optional[CompileBudget] = None) -> Grammar:
    """The whole output is `part`, from the first byte. whitespace_budget, max_depth and budget
    are compile_json_schema's limits, for the whole output."""
    part = _part(part, "the structure")
    opts = _options(whitespace_budget, max_depth)

    def build():
        b = _Builder(*opts)
        with budget_scope(budget):
            return Grammar.from_ir(b.finish(b.expr(part), "structure"), "structural", part)
    return CACHE.get_or_compile(("structural", part.key) + opts, build)


def compile_triggered(region: TriggeredRegion, *, whitespace_budget: Optional[int] = 64,
                      max_depth: int = 64,
                      budget: Optional[CompileBudget] = None) -> TriggeredGrammar:
    """The lazy form: free text until `region.trigger`, then the grammar of what follows it."""
    if not isinstance(region, TriggeredRegion):
        raise TypeError(f"compile_triggered takes a TriggeredRegion, not {type(region).__name__}")
    opts = _options(whitespace_budget, max_depth)

    def build():
        b = _Builder(*opts)
        with budget_scope(budget):
            return Grammar.from_ir(b.finish(region._after_trigger(b), "region"), "triggered",
                                   region)
    trigger = region.trigger_bytes if isinstance(region.trigger, Part) else region.trigger
    if isinstance(trigger, bytes) and not has_marks(trigger):
        trigger = trigger.decode("utf-8")
    return TriggeredGrammar(trigger,
                            CACHE.get_or_compile(("triggered", region.key) + opts, build))

