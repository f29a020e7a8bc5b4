"""Grammar IR: what every front end (GBNF, JSON Schema, regex, lexicon) compiles to.

A grammar is a set of named rules, each a regular expression over bytes whose
atoms may also be references to other rules. `cengine.automaton.build` turns it
into one byte-level pushdown automaton: one DFA per rule, rule references become
call edges (push a return frame), and the end of a rule pops.

Expressions are immutable tuples so compilers can share and hash them freely.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, Iterable, Optional, Tuple, Union

Ranges = Tuple[Tuple[int, int], ...]

# A bounded repeat is unrolled into one copy of its item per count; above this count an
# inlinable item stays a call (a string of maxLength 2000 is 2000 call positions, not 2000
# copies of the JSON character automaton). The builder (_build.pyx) unrolls by it and the
# JSON Schema front end plans around it, so it lives here, where both may import it.
UNROLL_INLINE_MAX = 32


# slots: a compile makes hundreds of thousands of these; without a __dict__ each is half the
# memory and half the objects for the cyclic collector to walk

# the leaves hash as their one field (the generated hash builds a 1-tuple per call; the
# composites' hashes ask the leaves' again and again): equal leaves still hash alike

@dataclass(frozen=True, slots=True)
class Bytes:
    """A literal byte string (b"" is the empty string, epsilon)."""
    data: bytes

    def __hash__(self):
        return hash(self.data)


@dataclass(frozen=True, slots=True)
class ByteSet:
    """One byte whose value falls in one of the inclusive ranges."""
    ranges: Ranges

    def __hash__(self):
        return hash(self.ranges)


@dataclass(frozen=True, slots=True)
class CharSet:
    """One Unicode scalar value (encoded as UTF-8) in one of the inclusive ranges.

    Surrogates (U+D800..U+DFFF) are never matched: they are not valid UTF-8.
    """
    ranges: Ranges

    def __hash__(self):
        return hash(self.ranges)


class _HashOnce:
    """Composite expressions are hashed (alt() deduplicates, compilers key tables on them)
    again and again; their structural hash is computed once and kept (in the _hash slot,
    unset until then)."""
    __slots__ = ("_hash",)


# each class spells its own structural hash (no generic walk over its fields), and reads the
# slot with getattr's default: about half of the hashes asked are first ones, and a Python
# try/except pays for raising AttributeError there
_set_hash = object.__setattr__


@dataclass(frozen=True, eq=True, slots=True)
class Seq(_HashOnce):
    items: Tuple["Expr", ...]

    def __hash__(self):
        h = getattr(self, "_hash", None)
        if h is None:
            h = hash(("Seq", self.items))
            _set_hash(self, "_hash", h)
        return h


@dataclass(frozen=True, eq=True, slots=True)
class Alt(_HashOnce):
    items: Tuple["Expr", ...]

    def __hash__(self):
        h = getattr(self, "_hash", None)
        if h is None:
            h = hash(("Alt", self.items))
            _set_hash(self, "_hash", h)
        return h


@dataclass(frozen=True, eq=True, slots=True)
class Repeat(_HashOnce):
    """`item` repeated between lo and hi times (hi None = unbounded)."""
    item: "Expr"
    lo: int
    hi: Optional[int]

    def __hash__(self):
        h = getattr(self, "_hash", None)
        if h is None:
            h = hash(("Repeat", self.item, self.lo, self.hi))
            _set_hash(self, "_hash", h)
        return h


@dataclass(frozen=True, slots=True)
class Ref:
    """A call of another rule by name."""
    name: str

    def __hash__(self):
        return hash(self.name)


@dataclass(frozen=True, slots=True)
class Dfa:
    """A ready deterministic automaton over bytes, matched within its rule's own frame: state
    0 starts; edges[q] holds (lo, hi, target) byte ranges, sorted and disjoint; accepting[q]
    says whether the match may end at q. The builder turns its states into positions one for
    one (a bounded number's DFA of a thousand states is one rule, not a thousand)."""
    edges: Tuple[Tuple[Tuple[int, int, int], ...], ...]
    accepting: Tuple[bool, ...]
    # what dfa_max_match and dfa_size answer, when the maker knows it already (an enum's
    # strings: the longest one, and the count its construction made); not part of equality
    longest: Optional[float] = field(default=None, compare=False)
    size: Optional[int] = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Nothing:
    """Matches no string at all (false schema, empty enum)."""


@dataclass(frozen=True, slots=True)
class AnyOrder:
    """A whole JSON object rule whose members may come in any order: `{`, members separated
    by `,`, `}`, optional structural whitespace (one byte of `ws`, repeated; it spends the
    whitespace budget) before and after each of those tokens. members[j] names the rule of
    one declared member (key, colon, value): each at most once, in any order (chain: in
    declared order, the form past the state budget), every required one before the close;
    extra names the rule of one other member (None: none), any number of times; lo..hi
    members in all (hi None: no bound). brackets b"[]" makes it an array of distinct
    elements instead (uniqueItems over a finite domain: members[j] the rule of one value).

    It stands for one state per (members written, members counted), which as IR rules cost
    a rule each to make, inline and determinize: the builder makes the positions of the
    states directly instead (cengine._anyorder), calling the member rules."""
    members: Tuple[str, ...]
    required: Tuple[bool, ...]
    extra: Optional[str]
    lo: int
    hi: Optional[int]
    chain: bool
    ws: Ranges
    brackets: bytes = b"{}"

    def refs(self) -> Tuple[str, ...]:
        """The rules it calls."""
        return self.members + ((self.extra,) if self.extra is not None else ())

    def productive(self, done) -> Tuple[bool, list]:
        """Whether it derives a finite string when the rules in `done` do (and the others
        not), and the rules that block it. Exact: any subset of the members that derive
        one, with every required member, in declared order, is a document of the object."""
        members = self.members
        if done.issuperset(members) and (self.extra in done if self.extra is not None
                                         else self.lo <= len(members)):
            return True, []         # the usual case, without the per-member lists below
        ok = [m in done for m in members]
        blockers = [m for m, k in zip(self.members, ok) if not k]
        extra = self.extra is not None and self.extra in done
        if self.extra is not None and not extra:
            blockers.append(self.extra)
        if not all(k for k, r in zip(ok, self.required) if r):
            return False, blockers
        if extra or self.lo <= 0:
            return True, blockers
        return sum(ok) >= self.lo, blockers


@dataclass(frozen=True, slots=True)
class FreeKey:
    """A whole rule: a JSON string (quotes included) whose decoded value is none of `names`
    (sorted, distinct), the free keys of an open object. Inside the trie of the names (a key
    still a prefix of one) a name's characters are accepted only in their canonical spelling
    (cengine.schema.json_grammar.canonical_string, character by character); a character that
    leaves the trie as itself calls `body` (the rest of any string, closing quote included),
    and at every trie node `escape` (a backslash, an escape of a character no name contains,
    the rest of the string) is called; the quote closes the key at a node that is no name.

    The trie is the DFA: the builder makes its positions directly from the sorted names
    (cengine._keytrie), one per trie node and UTF-8 or escape byte inside a name's character,
    plus a few shared ones for the UTF-8 tails of free characters, instead of a Thompson NFA
    and a subset construction of the trie's IR expression."""
    names: Tuple[str, ...]
    body: str
    escape: str
    # a rule called once the key is closed (an open object's `: value`), or None: the key
    # rule then holds the whole extra member, so a token such as `":` or `": {"` after a key
    # still inside the trie enters a rule instead of leaving one (leaving needs the stack at
    # mask time, entering does not)
    rest: Optional[str] = None

    def refs(self) -> Tuple[str, ...]:
        """The rules it calls."""
        if self.rest is not None:
            return (self.body, self.escape, self.rest)
        return (self.body, self.escape)

    def productive(self, done) -> Tuple[bool, list]:
        """Whether it derives a finite string when the rules in `done` do: always when `body`
        does (every key that leaves the trie ends through it), else only when a trie node is
        no name (the quote closes there); and with a `rest`, only when that rule does."""
        if self.rest is not None and self.rest not in done:
            good, why = replace(self, rest=None).productive(done)
            return False, why + [self.rest]
        if self.body in done:
            return True, []
        names = set(self.names)
        if "" not in names or any(n[:i] not in names for n in names for i in range(len(n))):
            return True, []
        return False, [self.body]


@dataclass(frozen=True, slots=True)
class KeyEscape:
    """A whole rule: a backslash, an escape (short, `\\uXXXX` in either case, a surrogate
    pair) of a character whose code point is not in `used` (sorted, disjoint ranges: the
    characters of a names set), then a call of `body` (the rest of the string). What the
    nodes of an ir.FreeKey trie call for every escape that leaves the trie; its positions
    are made directly too (cengine._keytrie), not from an expression of hex-digit ranges."""
    used: Ranges
    body: str

    def refs(self) -> Tuple[str, ...]:
        return (self.body,)

    def productive(self, done) -> Tuple[bool, list]:
        """Every escape goes on into `body` (and some character is always free: the names
        use finitely many)."""
        if self.body in done:
            return True, []
        return False, [self.body]


Expr = Union[Bytes, ByteSet, CharSet, Seq, Alt, Repeat, Ref, Dfa, Nothing, AnyOrder, FreeKey,
             KeyEscape]

EMPTY = Bytes(b"")
NOTHING = Nothing()

# The combinators below and GrammarIR.add make most of a compile's nodes: they fill the
# slots directly (object.__new__, then the slot's descriptor), the same objects the frozen
# dataclasses' generated __init__ makes, without its Python frame per node
_new = object.__new__
_set_bytes = Bytes.data.__set__
_set_seq = Seq.items.__set__
_set_alt = Alt.items.__set__
_set_ref = Ref.name.__set__


def byte_string(data: bytes) -> Bytes:
    """Bytes(data) for a bytes object, without the frozen dataclass's __init__ (the schema
    compiler makes one per property name and enum string)."""
    b = _new(Bytes)
    _set_bytes(b, data)
    return b


def ref(name: str) -> Ref:
    """Ref(name), without the frozen dataclass's __init__ (a compile makes thousands)."""
    r = _new(Ref)
    _set_ref(r, name)
    return r


def seq_of(items: tuple) -> Seq:
    """Seq(items) for items that are what seq() makes (flat, at least two, no empty or
    adjacent literals), without the frozen dataclass's __init__."""
    out = _new(Seq)
    _set_seq(out, items)
    return out


MAX_UNICODE = 0x10FFFF


def lit(data: Union[str, bytes]) -> Bytes:
    b = _new(Bytes)
    _set_bytes(b, data.encode("utf-8") if isinstance(data, str) else bytes(data))
    return b


def seq(*items: Expr) -> Expr:
    # one pass, dispatching on the exact type (the IR classes have no subclasses): flatten
    # Seq items one level, give up on Nothing, drop empty literals and merge adjacent ones
    # (fewer NFA states, same language)
    merged: list = []
    append = merged.append
    for it in items:
        t = type(it)
        if t is Seq:
            for x in it.items:
                if type(x) is Bytes:
                    if not x.data:
                        continue
                    if merged and type(merged[-1]) is Bytes:
                        merged[-1] = byte_string(merged[-1].data + x.data)
                        continue
                append(x)
        elif t is Bytes:
            if not it.data:
                continue
            if merged and type(merged[-1]) is Bytes:
                merged[-1] = byte_string(merged[-1].data + it.data)
                continue
            append(it)
        elif t is Nothing:
            return NOTHING
        else:
            append(it)
    if not merged:
        return EMPTY
    if len(merged) == 1:
        return merged[0]
    out = _new(Seq)
    _set_seq(out, tuple(merged))
    return out


_LEAVES = (Bytes, ByteSet, CharSet, Ref, Nothing)


def _sig(e, depth: int = 2):
    """A cheap summary of e: equal expressions have equal summaries (leaves are their own)."""
    t = type(e)
    if t is Seq or t is Alt:
        return (t, len(e.items), _sig(e.items[0], depth - 1) if depth > 0 and e.items else None)
    if t is Repeat:
        return (t, e.lo, e.hi, _sig(e.item, depth - 1) if depth > 0 else None)
    if t in _LEAVES:
        return e
    return t


def alt(*items: Expr) -> Expr:
    flat = []
    for it in items:
        t = type(it)
        if t is Alt:
            flat.extend(it.items)
        elif t is not Nothing:
            flat.append(it)
    if not flat:
        return NOTHING
    if len(flat) == 1:
        return flat[0]
    # duplicates are removed by hashing, which walks a whole expression the first time; when
    # the items' cheap summaries all differ no two items are equal, and that walk is skipped
    sigs = set()
    for it in flat:
        sg = _sig(it)
        if sg in sigs:
            break
        sigs.add(sg)
    else:
        out = _new(Alt)
        _set_alt(out, tuple(flat))
        return out
    uniq = list(dict.fromkeys(flat))
    if len(uniq) == 1:
        return uniq[0]
    out = _new(Alt)
    _set_alt(out, tuple(uniq))
    return out


def repeat(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    if hi is not None and hi < lo:
        return NOTHING
    if hi == 0:
        return EMPTY
    if lo == 1 and hi == 1:
        return item
    return Repeat(item, lo, hi)


def opt(item: Expr) -> Expr:
    return repeat(item, 0, 1)


def normalize_ranges(ranges: Iterable[Tuple[int, int]]) -> Ranges:
    """Sort and merge overlapping or adjacent inclusive ranges."""
    # most callers pass ranges normalized already (the code-point set helpers chain): a tuple
    # of int pairs, ascending, apart by at least one, is returned as it is
    if type(ranges) is tuple:
        prev = None
        for r in ranges:
            if type(r) is not tuple or len(r) != 2:
                break
            a, b = r
            if type(a) is not int or type(b) is not int or a > b or \
                    (prev is not None and a <= prev + 1):
                break
            prev = b
        else:
            return ranges
    out: list = []
    for lo, hi in sorted((int(a), int(b)) for a, b in ranges if a <= b):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def negate_ranges(ranges: Iterable[Tuple[int, int]], top: int = MAX_UNICODE) -> Ranges:
    out = []
    nxt = 0
    for lo, hi in normalize_ranges(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= top:
        out.append((nxt, top))
    return tuple(out)


def charset(ranges: Iterable[Tuple[int, int]], negated: bool = False) -> Expr:
    r = normalize_ranges(ranges)
    if negated:
        r = negate_ranges(r)
    if not r:
        return NOTHING
    return CharSet(r)


@dataclass(slots=True)
class Rule:
    name: str
    expr: Expr
    # JSON containers count toward max_depth (the automaton refuses to open deeper ones).
    container: bool = False
    # bytes consumed while this rule is on top of the stack spend the whitespace budget
    whitespace: bool = False
    # where the rule was defined, for error messages (GBNF: (line, column))
    origin: Optional[Tuple[int, int]] = None
    # keep the rule's frame wherever it is called (the builder never inlines it): a bounded
    # string's character, whose calls along the count let the mask tables decide plain
    # tokens by their length (cengine._mask: TokenTables._character_run)
    frame: bool = False


@dataclass
class GrammarIR:
    rules: dict = field(default_factory=dict)   # name -> Rule, insertion ordered
    root: str = "root"
    # documented limits carried into the automaton
    max_depth: Optional[int] = None             # container nesting; None = stack limit only
    whitespace_budget: Optional[int] = None     # None = unbounded
    # JSON Schema keywords that had no effect (unknown to the schema's draft), as
    # cengine.schema.drafts.IgnoredKeyword records: the compiled Grammar carries them
    ignored_keywords: tuple = ()
    # rule name -> (keyword, pointer): the JSON Schema location a schema front end compiled
    # the rule from, so a limit met while building the rule names the keyword and pointer
    sources: dict = field(default_factory=dict)

    def add(self, name: str, expr: Expr, container: bool = False, whitespace: bool = False,
            origin: Optional[Tuple[int, int]] = None, frame: bool = False) -> Ref:
        # Rule's fields filled in here (no **flags dict, no __init__ frame per call: a
        # compile adds thousands)
        r = _new(Rule)
        r.name = name
        r.expr = expr
        r.container = container
        r.whitespace = whitespace
        r.origin = origin
        r.frame = frame
        self.rules[name] = r
        ref = _new(Ref)
        _set_ref(ref, name)
        return ref

    def fresh_name(self, base: str) -> str:
        if base not in self.rules:
            return base
        # the smallest free suffix: rules are only ever added, so the search for a base goes
        # on from where it stopped last time (a per-base probe from 1 was quadratic in the
        # names sharing a base)
        memo = self.memo("fresh_names")
        i = memo.get(base, 1)
        while f"{base}-{i}" in self.rules:
            i += 1
        memo[base] = i
        return f"{base}-{i}"

    def memo(self, kind: str) -> dict:
        """A dict of what was made for these rules (one per kind, e.g. the free-key strings a
        front end made per names set): kept per rules dict, so a grammar whose rules a front
        end replaces starts afresh."""
        slot = "_memo_" + kind          # beside the fields, never one of them
        got = self.__dict__.get(slot)
        if got is None or got[0] is not self.rules:
            got = self.__dict__[slot] = (self.rules, {})
        return got[1]


def dfa_max_match(d: Dfa) -> float:
    """Longest string a Dfa matches: the longest path from state 0 to an accepting state
    (inf when a cycle is reachable; the states are live, every one reaches acceptance)."""
    if d.longest is not None:
        return d.longest
    n = len(d.accepting)
    longest = [0.0] * n          # longest path from q to acceptance, filled in post-order
    colour = [0] * n             # 0 new, 1 on the path, 2 done
    colour[0] = 1
    stack = [(0, iter(d.edges[0]))]
    while stack:
        q, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            stack.pop()
            colour[q] = 2
            best = 0.0 if d.accepting[q] else float("-inf")
            for _, _, t in d.edges[q]:
                best = max(best, longest[t] + 1)
            longest[q] = best
            continue
        t = nxt[2]
        if colour[t] == 1:
            return float("inf")
        if colour[t] == 0:
            colour[t] = 1
            stack.append((t, iter(d.edges[t])))
    return longest[0]


def dfa_size(d: Dfa) -> int:
    """Node count of a Dfa for the inlining budget: its states and edges."""
    if d.size is not None:
        return d.size
    return len(d.accepting) + sum(len(e) for e in d.edges)


_TERMINALS = frozenset((Bytes, ByteSet, CharSet, Dfa))


def productive_rules(g: GrammarIR, proven: Iterable[str] = ()) -> set:
    """Names of the rules that derive at least one finite string (least fixpoint). A front end
    whose root is not among them accepts nothing and refuses the grammar. `proven`: names of
    rules the caller knows derive one (a front end's fixed rules), taken as found without
    being checked (the fixpoint is the same: they are in it).

    A worklist, not repeated passes over every rule: a rule that fails is checked again only
    once one of the rules that blocked it (the first undone reference of a sequence, every
    one of a failing alternation) is found productive. Composite expressions found productive
    are remembered by identity (rules share them; g keeps them alive meanwhile)."""
    done: set = set(proven)
    ok: set = set()
    waiting: Dict[str, list] = {}
    terminals = _TERMINALS

    def prod(e, blockers: list) -> bool:
        t = type(e)
        if t is Ref:
            if e.name in done:
                return True
            blockers.append(e.name)
            return False
        if t is Seq:
            if id(e) in ok:
                return True
            for x in e.items:
                # calls and terminals inline: most items are one or the other
                tx = type(x)
                if tx is Ref:
                    if x.name not in done:
                        blockers.append(x.name)
                        return False
                elif tx not in terminals and not prod(x, blockers):
                    return False
        elif t is Alt:
            if id(e) in ok:
                return True
            for x in e.items:
                tx = type(x)
                if tx is Ref:
                    if x.name in done:
                        break
                    blockers.append(x.name)
                elif tx in terminals or prod(x, blockers):
                    break
            else:
                return False
        elif t is Repeat:
            if e.lo != 0 and not prod(e.item, blockers):
                return False
        elif t is AnyOrder or t is FreeKey or t is KeyEscape:
            good, why = e.productive(done)
            if not good:
                blockers.extend(why)
            return good
        else:
            return t in terminals
        ok.add(id(e))
        return True

    rules = g.rules
    for first, rule in rules.items():
        if first in done:
            continue
        blockers: list = []
        if not prod(rule.expr, blockers):
            for b in set(blockers):
                waiting.setdefault(b, []).append(first)
            continue
        done.add(first)
        # the rules it blocked are checked again (most rules block none: no list for them)
        todo = waiting.pop(first, None)
        while todo:
            name = todo.pop()
            if name in done:
                continue
            blockers = []
            if prod(rules[name].expr, blockers):
                done.add(name)
                todo.extend(waiting.pop(name, ()))
            else:
                for b in set(blockers):
                    waiting.setdefault(b, []).append(name)
    prod = None     # its closure holds itself: unbound, the cycle goes with the call
    return done
