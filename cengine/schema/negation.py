"""not, if/then/else and oneOf, rewritten into the keywords the compiler enforces.

`not S` becomes S's negation written as a schema: S is a conjunction of its keywords, so NOT
S is the disjunction of each keyword's negation (types, enum/const, required, properties,
bounds, lengths, anyOf, allOf, not; refused where one cannot be written). `if C then T else
E` is anyOf[C and T, NOT C and E]. `oneOf` is anyOf where no document can satisfy two
branches: branches proven disjoint from facts about their documents (types, values,
required and allowed names, discriminating properties), the others narrowed by the
negations of those they may share documents with, or refused."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .conjunction import _all_of, _parts_of
from .drafts import Node
from .drafts import pointer as _ptr
from .pattern_names import _name_matches
from . import formats
from .vocabulary import (ABSENT, CONTAINS, EXCLUDE, FRACTION, MAX_WITNESS_BOUND, NEEDS_PARTNER,
                         NOT_LANGUAGES, PATTERNS, TYPES,
                         _is_annotation, _is_bound, _is_count, _is_type, _json_among, _json_in,
                         _json_key, _same, _type_list,
                         _types_overlap)
from ..errors import CompileError
from .parts import CompilerPart


# how deep _facts / _disjoint read nested schemas (branches of anyOf / oneOf, values of
# required properties)
_FACTS_DEPTH = 4


# the types of documents a keyword constrains (every other document satisfies it)
_DOMAINS = {}
for _kws, _t in (
        (("properties", "required", "additionalProperties", "patternProperties",
          "propertyNames", "minProperties", "maxProperties", "dependentRequired",
          "dependentSchemas", ABSENT), ("object",)),
        (("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", CONTAINS),
         ("array",)),
        (("minLength", "maxLength", "pattern", "format", NOT_LANGUAGES, PATTERNS),
         ("string",)),
        (("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
          FRACTION),
         ("number", "integer"))):
    for _k in _kws:
        _DOMAINS[_k] = _t


_DOMAINS_OF = {t: [k for k, d in _DOMAINS.items() if t in d] for t in TYPES}

# the negation of a oneOf whose branches may overlap names each pair of branches: up to this
# many branches (6 pairs)
_MAX_ONEOF_PAIRS = 4

# the sibling keywords whose values a keyword's meaning depends on
_READS = {"additionalProperties": ("properties", "patternProperties"),
          "items": ("prefixItems",), "contains": ("minContains", "maxContains"),
          CONTAINS: ("minContains", "maxContains"), "if": ("then", "else"),
          "then": ("if", "else"), "else": ("if", "then"),
          "unevaluatedProperties": None, "unevaluatedItems": None}


class _Facts:
    """What every document of a schema has in common, for proving oneOf branches disjoint."""
    __slots__ = ("types", "values", "required", "props", "closed", "absent", "node", "depth")

    def __init__(self, types, values, required, props, closed, absent, node=None, depth=0):
        self.types = types          # set of TYPES the documents may have
        self.values = values        # the finite set of documents (enum/const), or None
        self.required = required    # names every object has
        self.props = props          # name -> schema of its value
        self.closed = closed        # the only names an object may have, or None
        self.absent = absent        # names no object has
        self.node = node            # the merged schema node (None: unknown)
        self.depth = depth          # how deep in the analysis of nested values it was read


class Negation(CompilerPart):
    """The not / if / oneOf part of the schema compiler (a mixin of compiler._Compiler:
    reads its closed, and calls its _norm, _kw, _validating_keys, _without, _resolve,
    _merged and _valid_parts)."""

    def _negate(self, x: Any, ptr: str, depth: int = 0, ctx: Optional[_Facts] = None):
        """A schema meaning NOT x, or None when it cannot be written exactly.

        x is a conjunction of its keywords, so NOT x is the disjunction of each keyword's
        negation (coupled keywords negated together); each negation is a schema.

        ctx: facts of the documents the negation will be conjoined with (None: any). The
        result N then only has to satisfy `ctx AND N == ctx AND NOT x`: a keyword of types
        ctx excludes has no negation there, a name ctx never has cannot fail, and within an
        object closed by `additionalProperties: false` "a name outside these" is one of the
        closed names (so additionalProperties and patternProperties have a negation)."""
        if x is True or (isinstance(x, dict) and not [k for k in x if not _is_annotation(k)]):
            return False
        if x is False:
            return True
        if not isinstance(x, dict) or depth > 12:
            return None
        n = self._norm(x, ptr)
        keys = set(self._validating_keys(n))
        idle = {k for k, partner in NEEDS_PARTNER.items() if k in keys and partner not in keys}
        if "if" in keys and not keys & {"then", "else"}:
            idle.add("if")
        keys -= idle
        if not keys:
            return False
        groups: List[set] = []
        if keys & {"enum", "const"}:
            groups.append(keys & {"enum", "const", "type"})
        for k in sorted(keys):
            if not any(k in grp for grp in groups):
                groups.append({k})
        negs = []
        for grp in groups:
            neg = self._negate_keywords(n, grp, ptr, depth, ctx)
            if neg is None:
                return None
            if neg is True:
                return True
            if neg is not False:
                negs.append(neg)
        if not negs:
            return False
        return negs[0] if len(negs) == 1 else Node({"anyOf": negs}, parts=None)

    def _negate_keywords(self, n: Node, grp: set, ptr: str, depth: int,
                         ctx: Optional[_Facts] = None):
        """NOT (the keywords grp of node n), or None (ctx: as for _negate)."""
        def node(d):
            return Node(d, parts=None)
        if ctx is not None and len(grp) == 1:
            (only,) = grp
            domain = _DOMAINS.get(only)
            if domain is not None and not _types_overlap(set(domain), ctx.types):
                return False        # every document of ctx has another type: it holds
        if ctx is not None and ctx.node is not None and self._implied(ctx.node, n, grp):
            return False            # every document of ctx satisfies these keywords
        if grp == {"$ref"}:
            target, tptr = self._resolve(n["$ref"], ptr, self._kw(n, "$ref"))
            return self._negate(target, tptr, depth + 1, ctx)
        if grp == {"type"}:
            t = _type_list(n["type"])
            if t is None or t is True:
                return None
            left = [y for y in TYPES if y not in t and y != "integer"]
            if "integer" in t and "number" not in t:
                # the other types, or a number that is no integer (compiled only beside no
                # numeric keyword: refused here when the context has one)
                m = ctx.node if ctx is not None else None
                if ctx is not None and m is not None and "number" in ctx.types and \
                        any(k in m for k in _DOMAINS_OF["number"]):
                    return None
                left.remove("number")
                frac = node({"type": "number", FRACTION: True})
                return node({"anyOf": [node({"type": left}), frac]}) if left else frac
            return node({"type": left}) if left else False
        if grp & {"enum", "const"}:
            values = [n["const"]] if "const" in n else n["enum"]
            if not isinstance(values, list):
                return None
            if "const" in n and "enum" in n:
                values = [v for v in values if _json_in(v, n["enum"])]
            t = _type_list(n.get("type"))
            if t is None:
                return None
            if t is not True:
                # type T AND enum V is the finite set of values of V that have type T
                values = [v for v in values if any(_is_type(v, y) for y in t)]
            return node({EXCLUDE: list(values)})
        (kw,) = grp
        v = n[kw]
        if kw == "required" and isinstance(v, list) and all(isinstance(r, str) for r in v):
            # NOT (an object having all of R) == an object without one of R
            alts = [node({"type": "object", ABSENT: [r]}) for r in dict.fromkeys(v)]
            return False if not alts else alts[0] if len(alts) == 1 else node({"anyOf": alts})
        if kw == "properties" and isinstance(v, dict):
            # NOT (each k there has a value S_k) == an object having some k with a value NOT S_k
            alts = []
            for name, sub in v.items():
                if ctx is not None and not self._may_have(ctx, name):
                    continue
                neg = self._negate(sub, _ptr(ptr, "properties", name), depth + 1,
                                   self._value_ctx(ctx, name, depth))
                if neg is None:
                    return None
                if neg is not False:
                    alts.append(node({"type": "object", "required": [name],
                                      "properties": {name: neg}}))
            return False if not alts else alts[0] if len(alts) == 1 else node({"anyOf": alts})
        if kw in ("additionalProperties", "patternProperties"):
            subs = list(v.values()) if kw == "patternProperties" and isinstance(v, dict) \
                else [v]
            if all(self._negate(sub, ptr, depth + 1) is False for sub in subs):
                return False        # schemas every value satisfies
            if ctx is not None and ctx.closed is not None:
                return self._negate_members(n, kw, ptr, depth, ctx)
            return None
        bounds = {"minimum": ("exclusiveMaximum", "number"),
                  "maximum": ("exclusiveMinimum", "number"),
                  "exclusiveMinimum": ("maximum", "number"),
                  "exclusiveMaximum": ("minimum", "number")}
        if kw in bounds and _is_bound(v) and self._kw(n, kw) == kw:
            other, t = bounds[kw]
            return node({"type": t, other: v})
        counts = {"minLength": ("maxLength", "string"), "maxLength": ("minLength", "string"),
                  "minItems": ("maxItems", "array"), "maxItems": ("minItems", "array"),
                  "minProperties": ("maxProperties", "object"),
                  "maxProperties": ("minProperties", "object")}
        if kw in counts and _is_count(v):
            other, t = counts[kw]
            if kw.startswith("min"):
                return False if v == 0 else node({"type": t, other: int(v) - 1})
            return node({"type": t, other: int(v) + 1})
        if kw == "items" and "prefixItems" not in n:
            # NOT (every element satisfies S) == an array with some element NOT S (compiled
            # beside no prefixItems, and minItems / maxItems up to MAX_WITNESS_BOUND: refused
            # here when the context passes that, so the refusal names the keyword that needed
            # the negation)
            m = ctx.node if ctx is not None else None
            if m is not None:
                hi, lo = m.get("maxItems"), m.get("minItems", 0)
                bound = hi if _is_count(hi) else lo if _is_count(lo) else MAX_WITNESS_BOUND + 1
                if "prefixItems" in m or bound > MAX_WITNESS_BOUND:
                    return None
            neg = self._negate(v, _ptr(ptr, "items"), depth + 1, None)
            if neg is None:
                return None
            return False if neg is False else node({"type": "array", CONTAINS: neg})
        if kw == "contains" and "minContains" not in n and "maxContains" not in n:
            # NOT (some element satisfies C) == an array whose every element satisfies NOT C
            # (the empty one too); with minContains / maxContains not written here
            neg = self._negate(v, _ptr(ptr, self._kw(n, "contains")), depth + 1, None)
            if neg is None:
                return None
            return node({"type": "array", "maxItems": 0}) if neg is False \
                else node({"type": "array", "items": neg})
        if kw == "oneOf" and isinstance(v, list) and v and self._pairwise_disjoint(v, ptr):
            # branches no document satisfies two of: oneOf is anyOf (below)
            kw = "anyOf"
        elif kw == "oneOf" and isinstance(v, list) and 1 < len(v) <= _MAX_ONEOF_PAIRS:
            # NOT (exactly one of B) == none of them, or two of them at once
            negs = [self._negate(b, _ptr(ptr, "oneOf", i), depth + 1, ctx)
                    for i, b in enumerate(v)]
            if any(s is None for s in negs):
                return None
            alts = [_all_of([v[i], v[j]]) for i in range(len(v)) for j in range(i + 1, len(v))]
            alts = [_all_of(negs)] + alts
            alts = [a for a in alts if a is not False]
            for a in alts:
                if isinstance(a, Node):
                    a.parts = None
            if any(a is True for a in alts):
                return True
            return False if not alts else alts[0] if len(alts) == 1 else node({"anyOf": alts})
        if kw == "anyOf" and isinstance(v, list):
            negs = [self._negate(b, _ptr(ptr, "anyOf", i), depth + 1, ctx)
                    for i, b in enumerate(v)]
            if any(s is None for s in negs):
                return None
            out = _all_of(negs)
            if isinstance(out, Node):
                out.parts = None
            return out
        if kw == "allOf" and isinstance(v, list):
            negs = [self._negate(b, _ptr(ptr, "allOf", i), depth + 1, ctx)
                    for i, b in enumerate(v)]
            if any(s is None for s in negs):
                return None
            negs = [s for s in negs if s is not False]
            if any(s is True for s in negs):
                return True
            return False if not negs else negs[0] if len(negs) == 1 else node({"anyOf": negs})
        if kw == "pattern" and isinstance(v, str):
            # NOT (contains a match of P) == a string none of whose substrings P matches: the
            # complement of P's language over code points (strings.excluding_string)
            return node({"type": "string", NOT_LANGUAGES: [["pattern", v]]})
        if kw == "format" and isinstance(v, str) and v not in formats.UNENFORCEABLE:
            if formats.format_expr(v) is None:
                return False        # an annotation: every string satisfies it
            return node({"type": "string", NOT_LANGUAGES: [["format", v]]})
        if kw == PATTERNS and isinstance(v, list):
            # NOT (a match of each) == a string without a match of one of them
            alts = [node({"type": "string", NOT_LANGUAGES: [["pattern", p]]}) for p in v]
            return False if not alts else alts[0] if len(alts) == 1 else node({"anyOf": alts})
        if kw == NOT_LANGUAGES and isinstance(v, list):
            # NOT (in none of L) == a string in one of them
            alts = [node({"type": "string", lang: value}) for lang, value in v]
            return False if not alts else alts[0] if len(alts) == 1 else node({"anyOf": alts})
        if kw == "not":
            return v
        return None

    def _implied(self, m: Node, n: Node, grp: set) -> bool:
        """The keywords grp of n stand in m (the merged node of the context) as they are, with
        the keywords their meaning reads beside them (additionalProperties: which names are
        declared or matched; items: prefixItems; a bound: its spelling)."""
        for k in grp:
            if k not in m or not _same(m[k], n[k]) or m.src.get(k, k) != n.src.get(k, k):
                return False
            reads = _READS.get(k, ())
            if reads is None:
                return False        # reads every keyword beside it
            for d in reads:
                if not _same(m.get(d), n.get(d)):
                    return False
        return True

    def _pairwise_disjoint(self, branches: list, ptr: str) -> bool:
        """No document satisfies two of branches (as the specification reads them)."""
        fs = [self._facts(b, ptr, False) for b in branches]
        return all(self._disjoint(fs[i], fs[j], branches[j], branches[i])
                   for i in range(len(branches)) for j in range(i + 1, len(branches)))

    def _may_have(self, ctx: _Facts, name: str) -> bool:
        """An object of ctx may have the member name."""
        if name in ctx.absent:
            return False
        return ctx.closed is None or name in ctx.closed

    def _value_ctx(self, ctx: Optional[_Facts], name: str, depth: int) -> Optional[_Facts]:
        """Facts of the value of member name in the objects of ctx (None: any value)."""
        if ctx is None or ctx.node is None or depth >= _FACTS_DEPTH:
            return None
        try:
            schemas = self._key_schemas(ctx.node, name, "")
        except CompileError:
            return None
        if not schemas:
            return None
        f = self._facts(_all_of(list(schemas)), "", False, ctx.depth + 1)
        # a value no schema allows: the member cannot occur (the caller skips it first)
        return f if f is not None else _Facts(set(), None, set(), {}, None, set())

    def _negate_members(self, n: Node, kw: str, ptr: str, depth: int, ctx: _Facts):
        """NOT additionalProperties / NOT patternProperties of n within ctx, whose objects
        have no names but ctx.closed: some of those names has a value that fails."""
        assert ctx.closed is not None
        props = n.get("properties", {})
        pats = n.get("patternProperties", {})
        if not isinstance(props, dict) or not isinstance(pats, dict):
            return None
        alts = []
        for name in sorted(ctx.closed):
            if not self._may_have(ctx, name):
                continue
            try:
                matched = [s for p, s in pats.items()
                           if _name_matches(p, name, ptr, self._regex_exprs)]
            except CompileError:
                return None
            if kw == "patternProperties":
                subs = matched
            elif name in props or matched:
                continue
            else:
                subs = [n["additionalProperties"]]
            for sub in subs:
                neg = self._negate(sub, ptr, depth + 1, self._value_ctx(ctx, name, depth))
                if neg is None:
                    return None
                if neg is not False:
                    alts.append(Node({"type": "object", "required": [name],
                                      "properties": {name: neg}}, parts=None))
        return False if not alts else alts[0] if len(alts) == 1 else \
            Node({"anyOf": alts}, parts=None)

    def _apply_not(self, schema: Node, ptr: str):
        # exact among the documents of the other keywords, which it is conjoined with
        ctx = self._facts(self._without(schema, "not"), ptr, False)
        neg = self._negate(schema["not"], _ptr(ptr, "not"), 0, ctx)
        if neg is None:
            raise CompileError("'not' is enforced where the negation of each keyword can be "
                               "written as a schema (types, enum/const, required, properties, "
                               "bounds, lengths, anyOf, allOf, not)", keyword="not",
                               pointer=_ptr(ptr, "not"))
        out = _all_of([self._without(schema, "not"), neg], ("not", _ptr(ptr, "not")))
        return out

    def _apply_if(self, schema: Node, ptr: str):
        cond = schema["if"]
        rest = self._without(schema, "if", "then", "else")
        neg = self._negate(cond, _ptr(ptr, "if"), 0, self._facts(rest, ptr, False))
        if neg is None:
            raise CompileError("'if' is enforced when its negation can be written as a schema "
                               "(see 'not')", keyword="if", pointer=_ptr(ptr, "if"))
        origin = ("if", _ptr(ptr, "if"))
        yes = _all_of([rest, cond, schema.get("then", True)], origin)
        no = _all_of([rest, neg, schema.get("else", True)], origin)
        alts = [s for s in (yes, no) if s is not False]
        if not alts:
            return False
        return Node({"anyOf": alts}, parts=None)

    def _one_of(self, schema: Node, ptr: str) -> Node:
        branches = schema["oneOf"]
        where = _ptr(ptr, "oneOf")
        if not isinstance(branches, list) or not branches:
            raise CompileError("'oneOf' must be a non-empty array", keyword="oneOf", pointer=where)
        rest = self._without(schema, "oneOf")
        origin = ("oneOf", where)
        spec = [self._facts(b, ptr, False) for b in branches]
        # branches of finitely many values (const / enum: an enum written as a oneOf of
        # consts) can share a document only with a branch of a value in common, or with a
        # branch of no value set: those alone are asked (every pair cost a validation each
        # way, seconds for a few hundred consts)
        by_value: Dict[Any, List[int]] = {}
        open_branches = []
        for j, g in enumerate(spec):
            if g is not None and g.values is not None:
                for v in g.values:
                    by_value.setdefault(_json_key(v), []).append(j)
            else:
                open_branches.append(j)
        out_branches = []
        for i, b in enumerate(branches):
            mine = self._facts(_all_of([rest, b], origin), ptr, self.closed)
            if mine is not None and mine.values is not None:
                asked = sorted(set(open_branches).union(
                    *(by_value.get(_json_key(v), ()) for v in mine.values)))
            else:
                asked = list(range(len(branches)))
            overlap = [j for j in asked if j != i and
                       not self._disjoint(mine, spec[j], branches[j], b)]
            if not overlap:
                out_branches.append(b)
                continue
            # B_i AND NOT B_j for each branch j it may share documents with: disjoint by
            # construction; the branches proven disjoint must stay so for the narrower node
            # the negations need only be exact among the documents of this branch
            ctx = self._facts(_all_of([rest, b], origin), ptr, False)
            negs = [self._negate(branches[j], _ptr(where, j), 0, ctx) for j in overlap]
            if any(n is None for n in negs):
                j = overlap[negs.index(None)]
                raise CompileError(f"'oneOf' is enforced only when its branches are provably "
                                   f"disjoint or the overlapping ones can be negated; branches "
                                   f"{min(i, j)} and {max(i, j)} may overlap", keyword="oneOf",
                                   pointer=where)
            narrowed = _all_of([b] + negs, origin)
            mine = self._facts(_all_of([rest, narrowed], origin), ptr, self.closed)
            for j in range(len(branches)):
                if j != i and j not in overlap and \
                        not self._disjoint(mine, spec[j], branches[j], b):
                    raise CompileError(f"'oneOf': branches {min(i, j)} and {max(i, j)} may "
                                       "overlap", keyword="oneOf", pointer=where)
            out_branches.append(narrowed)
        if "anyOf" in rest:
            # an anyOf beside the oneOf stays a conjunct of its own
            return _all_of([rest, Node({"anyOf": out_branches}, parts=None)], origin)
        out = Node(rest, src=rest.src, parts=_parts_of(schema))
        out["anyOf"] = out_branches
        return out

    def _facts(self, schema: Any, ptr: str, closed: bool, depth: int = 0) -> Optional[_Facts]:
        """Facts about the documents of schema (closed: objects with properties and no
        additionalProperties allow only their properties, as the compiled grammar does);
        None when the schema admits nothing. depth: how far below the oneOf the schema is
        read (the facts of anyOf / oneOf branches and of property values are read to a
        bounded depth).

        Kept by identity per (schema, ptr, closed, depth): an anyOf product folded one
        conjunct at a time (allOf of if/then blocks) asked again for the facts of every
        branch it had, at every step; neither the document's schemas nor the nodes the
        compiler made change once made, and the facts are only read."""
        memo = self._facts_memo
        key = (id(schema), ptr, closed, depth)
        got = memo.get(key)
        if got is not None and got[0] is schema:
            return got[1]
        out = self._read_facts(schema, ptr, closed, depth)
        if isinstance(schema, dict):
            memo[key] = (schema, out)
        return out

    def _read_facts(self, schema: Any, ptr: str, closed: bool, depth: int) -> Optional[_Facts]:
        try:
            m = self._merged(schema, ptr, ("oneOf", _ptr(ptr, "oneOf")))
        except CompileError:
            return _Facts(set(TYPES), None, set(), {}, None, set(), None, depth)
        if m is False:
            return None
        t = _type_list(m.get("type"))
        types = set(TYPES) if t is True or t is None else set(t)
        if "number" in types:
            types.add("integer")
        values = None
        if "const" in m:
            values = [m["const"]]
        elif isinstance(m.get("enum"), list):
            values = m["enum"]
        if depth < _FACTS_DEPTH:
            # a document of anyOf / oneOf satisfies one of the branches: its type is one of
            # theirs, and its value one of theirs when each branch has a finite set
            for kw in ("anyOf", "oneOf"):
                branches = m.get(kw)
                if not isinstance(branches, list) or not branches:
                    continue
                got = [self._facts(b, ptr, False, depth + 1) for b in branches]
                fs = [f for f in got if f is not None]
                union = {x for f in fs for x in f.types}
                types &= union | ({"integer"} if "number" in union else set())
                if values is None and all(f.values is not None for f in fs):
                    values = [v for f in fs for v in (f.values or [])]
        if values is not None:
            types &= {x for v in values for x in TYPES if _is_type(v, x)}
        req = m.get("required", [])
        # in the schema's order (a set's would differ between processes: _disjoint reads
        # the names one by one and stops at the first that proves the branches apart)
        required = dict.fromkeys(req).keys() if isinstance(req, list) else {}.keys()
        props = m.get("properties", {}) if isinstance(m.get("properties"), dict) else {}
        absent = set(m.get(ABSENT, []))
        if "not" in m:
            neg = self._negate(m["not"], ptr)
            if isinstance(neg, dict):
                absent |= set(neg.get(ABSENT, []))
        closed_keys = None
        if not m.get("patternProperties"):
            addl = m.get("additionalProperties", None)
            # the closed default holds for the compiled object only when no later rewrite
            # (not, if, anyOf, oneOf, dependentSchemas) can merge more properties into it
            rewrites = any(k in m for k in ("not", "if", "anyOf", "oneOf", "dependentSchemas"))
            if addl is False or (closed and addl is None and "properties" in m and not rewrites):
                closed_keys = {n for n, s in props.items() if s is not False}
        return _Facts(types, values, required, props, closed_keys, absent, m, depth)

    def _value_set(self, schema: Any, ptr: str) -> Optional[list]:
        f = self._facts(schema, ptr, False)
        return [] if f is None else f.values

    def _disjoint(self, f: Optional[_Facts], g: Optional[_Facts], g_schema, f_schema) -> bool:
        """No document of f (the compiled side) is valid under g_schema (spec side)."""
        if f is None or g is None:
            return True
        common = _types_overlap(f.types, g.types)
        if not common:
            return True
        if f.values is not None and g.values is not None and not _json_among(f.values,
                                                                             g.values):
            return True         # no value in common (no validation needed)
        if f.values is not None and not any(self._valid_parts(v, g_schema) is not False
                                            for v in f.values):
            return True
        if g.values is not None and not any(self._valid_parts(v, f_schema) is not False
                                            for v in g.values):
            return True
        if common != {"object"}:
            return False
        if f.closed is not None and g.required - f.closed:
            return True
        if (f.required & g.absent) or (g.required & f.absent):
            return True
        if g.closed is not None and f.required - g.closed:
            return True
        # a name one of them requires whose value no schema of both sides can share (a
        # discriminator: an enum / const the other side's schema rejects; a value of other
        # types; recursively, an object the other side's value cannot be)
        depth = max(f.depth, g.depth)
        if depth >= _FACTS_DEPTH or f.node is None or g.node is None:
            return False
        for name in list(f.required) + [n for n in g.required if n not in f.required]:
            try:
                fs = self._key_schemas(f.node, name, "")
                gs = self._key_schemas(g.node, name, "")
            except CompileError:
                continue
            for a in fs:
                for b in gs:
                    if self._disjoint(self._facts(a, "", False, depth + 1),
                                      self._facts(b, "", False, depth + 1), b, a):
                        return True
        return False
