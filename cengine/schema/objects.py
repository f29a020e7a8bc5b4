"""Objects: properties, required, additionalProperties (closed by default), patternProperties
and propertyNames (the extra keys' languages, keys.py), minProperties / maxProperties
(counted), dependentRequired / dependentSchemas (variants with each name present or absent),
and the member order: property_order "declared" (a chain of rules, declared members in the
schema's order, extra members last) or "any" (one ir.AnyOrder node whose states the builder
makes). Members, extra members and any-order objects are shared rules, one per expression."""
from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Tuple

from .. import ir
from . import json_grammar
from . import keys
from . import strings
from .conjunction import _accepts_everything, _all_of
from .drafts import Node
from .drafts import pointer as _ptr
from .pattern_names import _key_alphabet, _name_matches, _universal_pattern
from .vocabulary import ABSENT, EXCLUDE, MAX_VARIANTS, _same
from ..errors import CompileError, LimitError
from .parts import CompilerPart


# (property index, count) states of an object with minProperties/maxProperties
MAX_COUNT_STATES = 1024

# property_order "any" needs one state per subset of the declared properties written (times
# the member count when min/maxProperties count extra keys too): at most MAX_ORDER_STATES of
# them; a larger object keeps its declared properties in declared order, extra keys anywhere
# between them
MAX_ORDER_STATES = 2048

# extra keys of these IR types stand in a shared extra member's key by identity (hashing one
# walks its whole tree)
_COMPOSITE = (ir.Seq, ir.Alt, ir.Repeat)


def _seq_onto(x: ir.Expr, rest: ir.Expr) -> ir.Expr:
    """ir.seq(x, rest), the same result, without re-normalizing all of rest when rest is a Seq
    that ir.seq made (flat, no empty literal, no adjacent literals): only the seam between x
    and rest can merge. The chains of optional members are built by prepending one member at a
    time, which ir.seq would copy and rescan each time."""
    if type(rest) is not ir.Seq:
        return ir.seq(x, rest)
    head = ir.seq(x)
    if isinstance(head, ir.Nothing):
        return ir.NOTHING
    if type(head) is ir.Seq:
        hitems = head.items
    elif type(head) is ir.Bytes and not head.data:
        hitems = ()
    else:
        hitems = (head,)
    ritems = rest.items
    if hitems and type(hitems[-1]) is ir.Bytes and type(ritems[0]) is ir.Bytes:
        items = hitems[:-1] + (ir.Bytes(hitems[-1].data + ritems[0].data),) + ritems[1:]
    else:
        items = hitems + ritems
    return ir.Seq(items)


def _same_value(a: Any, b: Any) -> bool:
    """Schemas a and b are written alike, or both accept every value."""
    def free(x: Any) -> bool:
        return x is True or (isinstance(x, dict) and _accepts_everything(x))
    return _same(a, b) or (free(a) and free(b))


class Objects(CompilerPart):
    """The object part of the schema compiler (a mixin of compiler._Compiler: reads its g,
    closed, any_order, ignored, shared_parts, shared_keys, _property_values,
    _member_rules, _member_col(_items) and _regex_exprs, and calls its compile, _count,
    _kw, _without, _rule_name and _valid_parts)."""

    def _object(self, schema: dict, ptr: str) -> ir.Expr:
        g = self.g
        if EXCLUDE in schema and any(isinstance(v, dict) for v in schema[EXCLUDE]):
            raise CompileError("'not' of an object value is not enforced", keyword="not",
                               pointer=ptr)
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise CompileError("'properties' must be an object", keyword="properties",
                               pointer=_ptr(ptr, "properties"))
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise CompileError("'required' must be an array of strings", keyword="required",
                               pointer=_ptr(ptr, "required"))
        required = list(dict.fromkeys(required))
        absent = [n for n in schema.get(ABSENT, []) if isinstance(n, str)]
        if set(absent) & set(required):
            return ir.NOTHING
        pats = schema.get("patternProperties") or {}
        if "additionalProperties" in schema:
            addl, addl_ptr = schema["additionalProperties"], _ptr(ptr, "additionalProperties")
        elif ("properties" in schema or (isinstance(pats, dict) and pats and
                                         not all(_universal_pattern(p, self._regex_exprs)
                                                 for p in pats))) \
                and self.closed:
            addl, addl_ptr = False, ptr     # documented departure: closed by default
        else:
            addl, addl_ptr = True, ptr
        names_schema = schema.get("propertyNames", True)

        # (name, value schema, required) in document order
        decl: List[Tuple[str, Any, bool]] = []
        required_set = set(required)        # (objects with many properties require many)
        for name, sub in props.items():
            if absent and name in absent:
                continue
            decl.append((name, sub, name in required_set))
        for name in required:
            if name not in props:
                decl.append((name, None, True))      # its value meets additionalProperties
        entries: List[Tuple[str, ir.Expr, bool]] = []
        patterned = isinstance(pats, dict) and bool(pats)
        pp_ptr = _ptr(ptr, "patternProperties") if patterned else None
        props_ptr = ptr + "/properties/"
        rx = self._regex_exprs
        for name, sub, req in decl:
            # drafts.pointer's spelling, inline for the usual name that needs no escape
            prop_ptr = props_ptr + name if "~" not in name and "/" not in name \
                else _ptr(ptr, "properties", name)
            where = prop_ptr if sub is not None else addl_ptr
            matching = [s for p, s in pats.items()
                        if _universal_pattern(p, rx) or _name_matches(p, name, pp_ptr, rx)] \
                if patterned else []
            conj = [sub] + matching if sub is not None else (matching or [addl])
            if names_schema is not True and self._valid_parts(name, names_schema) is not True:
                if self._valid_parts(name, names_schema) is None:
                    raise CompileError("'propertyNames' could not be checked against a declared "
                                       "name", keyword="propertyNames",
                                       pointer=_ptr(ptr, "propertyNames"))
                conj = [False]
            if len(conj) == 1:
                # what _all_of makes of one schema, without its loop and its origin pair
                both = conj[0]
                if isinstance(both, dict) and _accepts_everything(both):
                    both = True
            else:
                both = _all_of(conj, ("properties", prop_ptr))
            entries.append((name, self._property_value(both, where) if both is not True
                            else json_grammar.value(g), req))
        present = []
        for name, e, req in entries:
            if isinstance(e, ir.Nothing):
                if req:
                    return ir.NOTHING        # a required property that cannot have a value
                continue
            present.append((name, e, req))
        declared = list(props) + [r for r in required if r not in props] + \
            [a for a in absent if a not in props]
        extras = self._extra_keys(schema, ptr, declared, addl, addl_ptr)
        lo = self._count(schema, "minProperties", ptr) or 0
        hi = self._count(schema, "maxProperties", ptr)
        if self.any_order:
            return self._object_expr_any_order(ptr, present, extras, lo, hi)
        return self._object_expr(ptr, present, extras, lo, hi)

    def _property_value(self, schema: Any, ptr: str) -> ir.Expr:
        """compile(schema, ptr) for a property's value. An allOf merge puts the base's own
        property schemas into every object that extends it (a protocol's hundreds of
        messages, a linter's rules), where each was compiled again for the same expression:
        a document's schema object whose compile added no rule and no ignored keyword gives
        that expression wherever it stands (its pointer only names new rules and errors), so
        from the second such compile on it is kept, by identity."""
        got = self._property_values.get(id(schema))
        if got is not None and got[0] is schema:
            return got[1]
        rules, ignored = len(self.g.rules), len(self.ignored)
        e = self.compile(schema, ptr)
        if type(schema) is dict and len(self.g.rules) == rules and len(self.ignored) == ignored:
            self._property_values[id(schema)] = (schema, e)
        return e

    def _value_expr(self, schema: Any, ptr: str) -> ir.Expr:
        return json_grammar.value(self.g) if schema is True else self.compile(schema, ptr)

    def _extra_keys(self, schema: dict, ptr: str, declared: List[str], addl: Any,
                    addl_ptr: str) -> List[Tuple[ir.Expr, ir.Expr]]:
        """(key, value) expressions of the members that are not declared properties.

        A pattern that every name matches acts on every member (additionalProperties then
        never applies). Other patterns (several only when they share one schema) split the
        extra keys into the pattern's strings and the rest (keys.py: a DFA, complemented for
        the rest, both minus the declared names), the rest taking additionalProperties.
        propertyNames is the extra keys' language, exact only when no declared name
        satisfies it (the declared names need no subtracting then), or when no extra key
        may occur.
        """
        g = self.g
        pats = schema.get("patternProperties") or {}
        names_schema = schema.get("propertyNames", True)
        pp_ptr = _ptr(ptr, "patternProperties")
        if not isinstance(pats, dict):
            raise CompileError("'patternProperties' must be an object", keyword="patternProperties",
                               pointer=pp_ptr)
        universal = [p for p in pats if _universal_pattern(p, self._regex_exprs)]
        narrow = [p for p in pats if p not in universal]
        # every name matches the universal patterns: they act like additionalProperties
        # beside the narrow ones, which then replace it (a name matching a pattern never
        # meets additionalProperties)
        every = [pats[p] for p in universal]
        out: List[Tuple[Optional[ir.Expr], ir.Expr]] = []   # (key, value); key None: free
        # names matching no pattern meet additionalProperties, unless a universal pattern
        # matches them too (then additionalProperties never applies)
        rest_value = _all_of(every, ("patternProperties", pp_ptr)) if universal else addl
        # a narrow pattern that accepts every value, where the rest's schema is what the
        # universal patterns leave (an OpenAPI `^x-` extension pattern of `{}` beside an open
        # object), splits nothing: its names take the same values as every other extra key,
        # and beside another pattern they match it adds nothing to that pattern's schema
        # (a pattern of some other schema, even one equal to the rest's, would)
        if _same_value(_all_of(every, ("patternProperties", pp_ptr)), rest_value):
            narrow = [p for p in narrow if not _same_value(pats[p], True)]
        if narrow:
            # patterns sharing a schema are one language; where no name matches two of the
            # languages each takes its own schema, else each set of them a name can match
            groups: List[List[str]] = []
            for p in narrow:
                for grp in groups:
                    if _same(pats[p], pats[grp[0]]):
                        grp.append(p)
                        break
                else:
                    groups.append([p])
            alphabet = _key_alphabet(narrow)
            every_name = ir.alt(*(self._pattern_language(p, pp_ptr) for p in narrow))
            if len(groups) == 1 or all(strings.patterns_disjoint(tuple(a), tuple(b))
                                       for i, a in enumerate(groups) for b in groups[i + 1:]):
                parts = [(ir.alt(*(self._pattern_language(p, pp_ptr) for p in grp)),
                          _all_of([pats[grp[0]]] + every, ("patternProperties", pp_ptr)),
                          False, _ptr(pp_ptr, grp[0])) for grp in groups]
            else:
                # a name may match patterns of several schemas: one language per set of
                # schemas a name meets (the names matching exactly those), taking all of them
                regions = strings.pattern_regions(tuple(tuple(grp) for grp in groups)) \
                    if len(groups) <= strings.MAX_PATTERN_GROUPS else None
                if regions is None:
                    raise CompileError("several 'patternProperties' patterns with different "
                                       "schemas that a name may match together, past the "
                                       "limits of their split (at most MAX_PATTERN_GROUPS, "
                                       f"{strings.MAX_PATTERN_GROUPS}, schemas; "
                                       "MAX_EXCLUDING_STATES states)",
                                       keyword="patternProperties", pointer=pp_ptr)
                parts = [(language,
                          _all_of([pats[groups[i][0]] for i in met] + every,
                                  ("patternProperties", pp_ptr)),
                          False, _ptr(pp_ptr, groups[met[0]][0])) for met, language in regions]
            parts.append((every_name, rest_value, True, addl_ptr))
            for language, value_schema, negate, where in parts:
                value = self._value_expr(value_schema, where)
                if isinstance(value, ir.Nothing):
                    continue
                key = keys.key_expr(g, self._rule_name(where, "key"), language, declared,
                                  negate=negate, keyword="patternProperties", pointer=pp_ptr,
                                  alphabet=alphabet)
                if not isinstance(key, ir.Nothing):
                    out.append((key, value))
        else:
            value = self._value_expr(rest_value, pp_ptr if universal else addl_ptr)
            if not isinstance(value, ir.Nothing):
                out.append((None, value))
        if not out:
            return out
        if names_schema is not True and names_schema != {}:
            nptr = _ptr(ptr, "propertyNames")
            if any(self._valid_parts(n, names_schema) is not False for n in declared):
                raise CompileError("'propertyNames' beside extra keys is enforced only when no "
                                   "declared name satisfies it", keyword="propertyNames",
                                   pointer=nptr)
            if any(k is not None for k, _ in out):
                raise CompileError("'propertyNames' beside narrow 'patternProperties' is not "
                                   "enforced", keyword="propertyNames", pointer=nptr)
            key = self.compile(_all_of([names_schema, {"type": "string"}],
                                       ("propertyNames", nptr)), nptr)
            return [(key, v) for _, v in out]
        if all(k is not None for k, _ in out):
            return out
        # (a FreeKeys: its rule is made where it is called, _object_expr; under
        # property_order "any" the extra member's own free-key rule stands instead)
        free = json_grammar.free_keys(g, declared)
        return [(k if k is not None else free, v) for k, v in out]

    def _pattern_language(self, pattern: Any, pp_ptr: str) -> ir.Expr:
        """strings.pattern_expr of a patternProperties pattern, parsed once per compile:
        schemas repeat one pattern in many objects (a translated-field pattern of a few
        hundred characters in every object of a release schema), and the same IR object
        also makes the key languages' memo hit by identity."""
        if not isinstance(pattern, str):
            return strings.pattern_expr(pattern, pp_ptr)     # (refused, naming pp_ptr)
        e = self._regex_exprs.get(pattern)
        if e is None:
            e = self._regex_exprs[pattern] = strings.pattern_expr(pattern, pp_ptr)
        return e

    def _object_expr(self, ptr: str, present, extras, lo: int, hi: Optional[int]) -> ir.Expr:
        """The object rule: declared members in order (required ones must come), then extra
        members; with lo/hi, the members are counted (extra ones too: the count states
        follow the declared chain)."""
        g = self.g
        col = json_grammar.colon(g)
        sep = json_grammar.comma(g)
        extras = [(json_grammar.free_key_rule(g, k) if type(k) is json_grammar.FreeKeys else k, v)
                  for k, v in extras]
        kvs = [ir.seq(ir.byte_string(json_grammar.canonical_string(n)), col, e)
               for n, e, _ in present]
        extra = json_grammar.alt(*(ir.seq(k, col, v) for k, v in extras)) if extras else None
        n = len(present)
        n_req = sum(1 for _, _, r in present if r)
        if hi is not None and n_req > hi:
            return ir.NOTHING
        if lo >= 2 and extra is not None:
            # two equal extra keys count twice here but once in the parsed object
            raise CompileError("'minProperties' above 1 beside extra keys is not enforced (a "
                               "repeated key would count twice)", keyword="minProperties",
                               pointer=_ptr(ptr, "minProperties"))
        if lo > n + (1 if extra is not None else 0):
            return ir.NOTHING
        counted = lo > 1 or hi is not None
        if counted and (n + 1) * ((hi if hi is not None else lo) + 1) > MAX_COUNT_STATES:
            raise LimitError(f"counting {n} properties up to {hi if hi is not None else lo} "
                             f"needs more than {MAX_COUNT_STATES} states",
                             keyword="maxProperties" if hi is not None else "minProperties",
                             pointer=_ptr(ptr,
                                          "maxProperties" if hi is not None else "minProperties"))
        first_req = next((i for i, (_, _, r) in enumerate(present) if r), None)
        starts = list(range(n if first_req is None else first_req + 1))
        inline = len(starts) * max(n, 1) <= 64 and not counted
        # inlined, every first property's chain would end in its own copy of the extra
        # members' loop (a copy of the free keys' trie each): the loop follows them all once
        # instead, the same language
        tail = None
        if inline and extra is not None:
            tail = ir.repeat(ir.seq(sep, extra), 0, None)
        cache: Dict[Tuple[int, int], ir.Expr] = {}

        def cap(c: int) -> int:
            # counts past both bounds' reach behave alike: one state for them all
            return c if hi is not None else min(c, lo)

        def after(i: int, c: int) -> ir.Expr:
            # properties i.. (and extra keys) once c members have been written
            c = cap(c)
            if (i, c) in cache:
                return cache[(i, c)]
            if hi is not None and c > hi:
                e = ir.NOTHING
            elif i == n:
                if extra is None or tail is not None:
                    e = ir.EMPTY if c >= lo else ir.NOTHING
                else:
                    e = ir.repeat(ir.seq(sep, extra), max(lo - c, 0),
                                  None if hi is None else hi - c)
            elif not counted:
                item = ir.seq(sep, kvs[i])
                e = _seq_onto(item if present[i][2] else ir.opt(item), after(i + 1, c))
            else:
                take = _seq_onto(ir.seq(sep, kvs[i]), after(i + 1, c + 1))
                e = take if present[i][2] else json_grammar.alt(take, after(i + 1, c))
            if not inline and i < n and not isinstance(e, ir.Nothing):
                e = g.add(self._rule_name(ptr, f"after{i}" + (f"-{c}" if counted else "")), e)
                made.append(e.name)
            cache[(i, c)] = e
            return e

        made: List[str] = []
        firsts = [_seq_onto(kvs[j], after(j + 1, 1)) for j in starts]
        if first_req is None and extra is not None:
            firsts.append(_seq_onto(extra, after(n, 1)))
        members = json_grammar.alt(*firsts)
        after = None    # unbound: it calls itself through its cell (a cycle)
        # the chain's rules were made callee first; each caller before its callees instead
        # (reverse post-order), so the builder's shortest-completion sweeps, which run from
        # the last position down, see a callee's length before its callers (made as they
        # came, a chain of 175 rules took 175 sweeps)
        for name in reversed(made):
            g.rules[name] = g.rules.pop(name)
        if tail is not None:
            members = ir.seq(members, tail)
        empty_ok = first_req is None and lo == 0
        expr = json_grammar.container(g, "{", members, "}", nullable_members=empty_ok)
        return g.add(self._rule_name(ptr, "object"), expr, container=True)

    def _object_expr_any_order(self, ptr: str, present, extras, lo: int,
                               hi: Optional[int]) -> ir.Expr:
        """The object rule under property_order="any": members in every order, each declared
        name at most once, the object closing only once every required one is written.

        Its states are (the declared properties written, the members counted; the count only
        where min/maxProperties need it and extra keys make it differ from the number
        written): 2**n states for n declared properties, and no automaton does with fewer
        (after two different subsets some name is allowed after one and not the other); past
        MAX_ORDER_STATES the declared properties keep declared order (state: the next one that
        may come) while extra keys still stand anywhere. Each member (key, colon, value) is
        one rule, compiled once; the object is one ir.AnyOrder node calling them, whose states
        the builder makes as positions directly (one IR rule per state cost a rule each to
        make, inline and determinize; tests/oracles/any_order_reference.py keeps that form
        as the reference)."""
        g = self.g
        col = json_grammar.colon(g)
        n = len(present)
        n_req = sum(1 for _, _, r in present if r)
        if hi is not None and (n_req > hi or lo > hi):
            return ir.NOTHING
        if lo >= 2 and extras:
            raise CompileError("'minProperties' above 1 beside extra keys is not enforced (a "
                               "repeated key would count twice)", keyword="minProperties",
                               pointer=_ptr(ptr, "minProperties"))
        if lo > n + (1 if extras else 0):
            return ir.NOTHING
        # the member count matters up to the larger bound; in the subset states without extra
        # keys it is the number of properties written, which the state holds already
        bounded = lo > 1 or hi is not None
        top = hi if hi is not None else lo
        width = top + 1 if bounded and extras else 1
        subsets = n <= 30 and (1 << n) * width <= MAX_ORDER_STATES
        counted = bounded and (bool(extras) or not subsets)
        if not subsets and counted and (n + 1) * (top + 1) > MAX_COUNT_STATES:
            raise LimitError(f"counting {n} properties up to {top} needs more than "
                             f"{MAX_COUNT_STATES} states",
                             keyword="maxProperties" if hi is not None else "minProperties",
                             pointer=_ptr(ptr,
                                          "maxProperties" if hi is not None else "minProperties"))
        # every state calls the members: one rule each, so their positions (and mask tables)
        # are shared by all of them
        members = tuple(self._member_rule(ptr, name, e, col) for name, e, _ in present)
        extra = None
        if extras:
            # composite keys by identity: equal key languages are one object already
            # (string_not_in, key_expr: once per grammar), and hashing a names trie walks it
            key = ("extra-member", tuple((id(k) if type(k) in _COMPOSITE else k, v)
                                         for k, v in extras))
            extra = self.shared_parts.get(key)
            if extra is None:
                options = [self._extra_option(ptr, k, col, v) for k, v in extras]
                if len(options) == 1 and json_grammar.is_free_member(g, options[0]):
                    # the free-key rule is the whole extra member already
                    extra = self.shared_parts[key] = options[0].name
                else:
                    extra = self._object_part(ptr, "extra-member", json_grammar.alt(*options),
                                              key=key)
                self.shared_keys.extend(k for k, _ in extras)   # (their ids stay theirs)
        json_grammar.ws(g)      # (the root's whitespace rule: its bytes are the node's whitespace)
        node = ir.AnyOrder(members, tuple(r for _, _, r in present), extra, lo, hi,
                           not subsets, json_grammar.ws_bytes())
        return ir.ref(self._object_part(ptr, "object", node, container=True))

    def _member_rule(self, ptr: str, name: str, e: ir.Expr, col: ir.Expr) -> str:
        """The rule of the member `name col e`: _object_part's, looked up first by the value
        expression's identity (objects that extend one base through allOf hold the base's
        members by the same expression objects, which _object_part would spell and hash
        again per object)."""
        got = self._member_rules.get((name, id(e)))
        if got is not None and got[0] is e:
            return got[1]
        # most values are calls (an object's, an array's, a $ref's rule): a member that is
        # the name, col and one call is keyed by the three, not by its expression, whose
        # hash calls every leaf's __hash__; any member expression of that form gets that key
        # (the name's spelling is one to one), so equal expressions still share one rule
        name_lit = ir.byte_string(json_grammar.canonical_string(name))
        if type(e) is ir.Ref:
            call = e
            # what ir.seq makes of them, spelled directly once col is known to join a
            # literal before it and a call after it unchanged (no literal at its ends)
            if col is not self._member_col:
                self._member_col = col
                self._member_col_items = col.items if type(col) is ir.Seq and \
                    ir.seq(ir.Bytes(b'"'), col, call).items == (ir.Bytes(b'"'),) + col.items + \
                    (call,) else None
            if self._member_col_items is not None:
                expr = ir.seq_of((name_lit,) + self._member_col_items + (e,))
            else:
                expr = ir.seq(name_lit, col, e)
        else:
            expr = ir.seq(name_lit, col, e)
            call = expr.items[-1] if type(expr) is ir.Seq else None
            if type(call) is not ir.Ref or expr != ir.seq(name_lit, col, call):
                call = None
        key = ("member", expr) if call is None else ("member-call", name, call.name, col)
        # drafts.pointer's spelling, inline for the usual name that needs no escape
        mptr = ptr + "/properties/" + name if "~" not in name and "/" not in name \
            else _ptr(ptr, "properties", name)
        rule = self._object_part(mptr, "member", expr, key=key)
        self._member_rules[(name, id(e))] = (e, rule)
        return rule

    def _extra_option(self, ptr: str, k: ir.Expr, col: ir.Expr, v: ir.Expr) -> ir.Expr:
        """Extra members with keys k: `k col v`. Free keys (json_grammar.FreeKeys) are one
        rule, the names' trie, that calls `col v` as a rule of its own once the key is closed
        (made instead of string_not_in's rule, which nothing would call), so that a token such
        as `":` after a key still inside the names' trie enters a rule instead of leaving the
        key's (the mask tables decide entering ahead of time; leaving needs the stack)."""
        if type(k) is json_grammar.FreeKeys:
            rest = self._object_part(ptr, "extra-value", ir.seq(col, v),
                                     keyword="additionalProperties")
            return json_grammar.free_member(self.g, k, rest)
        return ir.seq(k, col, v)

    def _object_part(self, ptr: str, kind: str, expr: ir.Expr, container: bool = False,
                     keyword: Optional[str] = None, key: Optional[tuple] = None) -> str:
        """The rule of a member, an extra member or an any-order object: one per expression.
        Schemas repeat them (a protocol's messages declare the same members, objects of
        the same members are equal then too); equal expressions are one rule, so the builder
        makes its positions once. Named after the first place it occurs."""
        if key is None:
            key = (kind, expr)
        name = self.shared_parts.get(key)
        if name is None:
            name = self.shared_parts[key] = self.g.add(self._rule_name(ptr, kind, keyword),
                                                       expr, container=container).name
        return name

    def _dependent(self, schema: Node, ptr: str) -> ir.Expr:
        req = schema.get("dependentRequired", {})
        sch = schema.get("dependentSchemas", {})
        for kw, v in (("dependentRequired", req), ("dependentSchemas", sch)):
            lists = isinstance(v, dict) and all(
                isinstance(x, list) and all(isinstance(n, str) for n in x) for x in v.values())
            if not isinstance(v, dict) or (kw == "dependentRequired" and not lists):
                raise CompileError(f"'{kw}' is malformed", keyword=self._kw(schema, kw),
                                   pointer=_ptr(ptr, self._kw(schema, kw)))
        names = list(dict.fromkeys(list(req) + list(sch)))
        if 2 ** len(names) > MAX_VARIANTS:
            kw = "dependentRequired" if req else "dependentSchemas"
            raise LimitError(f"{len(names)} dependent names need {2 ** len(names)} variants, more "
                             f"than the limit of {MAX_VARIANTS}", keyword=self._kw(schema, kw),
                             pointer=_ptr(ptr, self._kw(schema, kw)))
        base = self._without(schema, "dependentRequired", "dependentSchemas")
        base.parts = None
        alts = []
        for present in itertools.product((False, True), repeat=len(names)):
            v = Node(base, src=base.src, parts=None)
            extra = []
            for name, here in zip(names, present):
                if here:
                    v["required"] = list(dict.fromkeys(list(v.get("required", [])) + [name] +
                                                       list(req.get(name, []))))
                    if name in sch:
                        extra.append(sch[name])
                else:
                    v[ABSENT] = list(v.get(ABSENT, [])) + [name]
            origin = (self._kw(schema, "dependentSchemas"),
                      _ptr(ptr, self._kw(schema, "dependentSchemas")))
            alts.append(self.compile(_all_of([v] + extra, origin) if extra else v, ptr))
        return ir.alt(*alts)
