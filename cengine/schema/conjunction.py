"""Conjunctions: allOf, and a $ref beside other keywords, merged into one schema node that
means exactly the conjunction (False when nothing satisfies it), or refused (CompileError
naming the keyword) where no single node can say it. Each distinct conjunction is one rule,
so a conjunction that reaches itself through its properties is a recursive rule.

_all_of builds a conjunction node (the other parts of the compiler build them too: anyOf
beside siblings, not, if/then/else, oneOf, propertyNames); a node's `parts` are the original
schemas it stands for, which the validator reads (enums.py)."""
from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii as _json_ascii
from fractions import Fraction
from typing import Any, Optional, Tuple, Union

from .. import ir
from . import numbers
from .drafts import Node
from .drafts import pointer as _ptr
from .pattern_names import _name_matches
from .vocabulary import (ABSENT, ANNOTATIONS, EXCLUDE, MAX_VARIANTS, NEEDS_PARTNER, NOT_LANGUAGES,
                         PATTERNS, TYPES,
                         _is_annotation, _is_bound, _is_count, _json_among, _same, _types_overlap,
                         _values_of)
from ..errors import CompileError
from .parts import CompilerPart


def _parts_of(*schemas) -> Optional[list]:
    """The original schemas whose conjunction these schemas mean (None: unknown)."""
    out = []
    for s in schemas:
        if s is True:
            continue
        if isinstance(s, Node):
            if s.parts is None:
                return None
            out.extend(s.parts)
        else:
            out.append(s)
    return out


_EVERY_TYPE = frozenset(TYPES) - {"integer"}

# _flatten: the keywords a conjunct's rest leaves out (folded in), and those that do
# nothing without a partner (NEEDS_PARTNER, and `if` without then / else)
_FOLDED = frozenset(("allOf", "$ref"))
_PARTNERED = frozenset(NEEDS_PARTNER) | {"if"}
_new_dict = dict.__new__
_fill = dict.update

# what json.dumps writes member by member (_json_text)
_CONTAINERS = (dict, list, tuple)


def _scalar_text(x: Any) -> str:
    """json.dumps(x) of a value that is no container (the common ones without the
    encoder)."""
    t = type(x)
    if t is str:
        return _json_ascii(x)
    if x is True:
        return "true"
    if x is False:
        return "false"
    if x is None:
        return "null"
    if t is int:
        return int.__repr__(x)
    if t is float and math.isfinite(x):
        return float.__repr__(x)
    return json.dumps(x)


def _accepts_everything(schema: dict) -> bool:
    """Every document satisfies schema: nothing but annotations and, at most, a `type` list
    of every type (generated schemas write TypeScript's `any` so). As a conjunct it adds
    nothing, and without it a `$ref` beside it stays a call of the referenced rule instead of
    a merged copy compiled again. (Annotations only: an unknown keyword is recorded as
    ignored when the schema is read, so such a schema is kept.)"""
    for k in schema:
        if k == "type":
            t = schema[k]
            if not (isinstance(t, list) and _EVERY_TYPE.issubset(t) and
                    all(isinstance(x, str) and x in TYPES for x in t)):
                return False
        elif k not in ANNOTATIONS:
            return False
    return True


def _all_of(schemas: list, origin: Optional[Tuple[str, str]] = None):
    """The conjunction of schemas as one schema (True / False / the schema / an allOf node;
    origin: the (keyword, pointer) that errors about the made node name)."""
    items = []
    for s in schemas:
        if s is True or (isinstance(s, dict) and _accepts_everything(s)):
            continue
        if s is False:
            return False
        if not any(_same(s, x) for x in items):
            items.append(s)
    if not items:
        return True
    if len(items) == 1:
        return items[0]
    return Node({"allOf": items}, parts=_parts_of(*items), origin=origin)


def _common_multiple(a: Fraction, b: Fraction) -> Optional[Union[int, float]]:
    """The least common multiple of two positive rationals (a number is a multiple of both
    exactly when it is a multiple of it), written as JSON would write it: an integer, or a
    float whose shortest spelling is exactly that value; None when no float spells it."""
    lcm = Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))
    if lcm.denominator == 1:
        return int(lcm)
    spelled = float(lcm)
    return spelled if numbers._spec_value(spelled) == lcm else None


def _has_patterns(side: dict) -> bool:
    """side's names may also meet patternProperties (_key_lookup reads them)."""
    pats = side.get("patternProperties", {})
    return isinstance(pats, dict) and bool(pats)


def _inert(part: dict) -> bool:
    """part has no keyword _merge2 reads (annotations and $id only, or none)."""
    for k in part:
        if k != "$id" and not _is_annotation(k):
            return False
    return True


# the keywords _merge2 leaves to _merge_objects and _merge_arrays
_OBJECT_KEYS = ("properties", "additionalProperties", "patternProperties")
_ARRAY_KEYS = ("prefixItems", "items")
_OBJECT_KEYSET, _ARRAY_KEYSET = frozenset(_OBJECT_KEYS), frozenset(_ARRAY_KEYS)
# the keys _merge2's loop leaves alone: those two groups, annotations (and x-...: see
# _is_annotation) and $id
_NOT_MERGED_HERE = _OBJECT_KEYSET | _ARRAY_KEYSET | ANNOTATIONS | {"$id"}


class Conjunction(CompilerPart):
    """The allOf part of the schema compiler (a mixin of compiler._Compiler: reads its g,
    conj_rules, _flat_refs, _flat_depth, _json_texts and _regex_exprs, and calls its
    compile, _norm, _kw, _resolve and _rule_name)."""

    def _conj_rule(self, schema: Node, ptr: str, kw: str) -> ir.Expr:
        """One rule per distinct conjunction (so a conjunction that reaches itself through
        its properties is a recursive rule, not an endless inlining)."""
        key = self._json_text(schema)
        name = self.conj_rules.get(key)
        if name is None:
            name = self._rule_name(ptr, "all")
            self.conj_rules[key] = name
            self.g.add(name, ir.NOTHING)
            origin = schema.origin or (self._kw(schema, kw), _ptr(ptr, self._kw(schema, kw)))
            merged = self._merged(schema, ptr, origin)
            self.g.rules[name].expr = ir.NOTHING if merged is False else self.compile(merged, ptr)
        return ir.ref(name)

    def _json_text(self, x: Any) -> str:
        """json.dumps(x). The conjunctions _conj_rule keys by their text hold the same
        document objects over and over (a base schema merged into every object extending it,
        a property's schema beside each pattern that matches its name, the chains of if/then
        rewrites and anyOf products growing by one conjunct at a time), which one json.dumps
        per key wrote out whole each time (tens of times the document's size). So what the
        compiler made is spelled member by member: a node, a list holding containers (an
        allOf chain's), a dict holding a node (a merged `properties`); anything else, the
        document's schemas above all, in one json.dumps. The text of a dict, list or node is
        kept, with the object, by identity: neither the document nor a container or node
        the compiler made is ever changed once it stands in a schema node."""
        t = type(x)
        if t is dict or t is list or t is Node:
            got = self._json_texts.get(id(x))
            if got is not None and got[0] is x:
                return got[1]
            if t is list:
                spelled = any(isinstance(v, _CONTAINERS) for v in x)
            else:
                spelled = (t is Node or any(type(v) is Node for v in x.values())) and \
                    all(type(k) is str for k in x)
            if not spelled:
                text = json.dumps(x)
            elif t is list:
                text = "[" + ", ".join([self._json_text(v) for v in x]) + "]"
            else:
                # json.dumps's own spelling: ", " between members, ": " after an
                # ASCII-escaped key
                text = "{" + ", ".join([_json_ascii(k) + ": " + self._json_text(v)
                                        for k, v in x.items()]) + "}"
            self._json_texts[id(x)] = (x, text)
            return text
        if isinstance(x, _CONTAINERS):
            return json.dumps(x)
        return _scalar_text(x)

    def _merged(self, schema: Any, ptr: str, origin: Tuple[str, str]):
        """schema with its allOf and $ref folded in: one Node without either, or False.
        origin: the (keyword, pointer) a refusal names."""
        if type(schema) is Node:
            # merged before with the same origin (a merge reads and adds nothing else; the
            # nodes it makes carry the origin): the same merge
            got = self._merged_nodes.get((id(schema), origin))
            if got is not None and got[0] is schema:
                return got[1]
        parts = self._flatten(schema, ptr, (), origin)
        out: Any = Node(parts=_parts_of(schema) if isinstance(schema, dict) else None)
        start, head = self._merged_head(schema, origin)
        if head is not None:
            if head is False:
                return False
            out = head
        for p in parts[start:] if start else parts:
            if p is False:
                return False
            if _inert(p) and not _has_patterns(out):
                # a part of annotations alone (an allOf node's own rest, a titled wrapper):
                # merged, it gives back what the fold has (each kept property is what _all_of
                # made of it), except where a pattern meets a property again
                continue
            out = self._merge2(out, p, ptr, origin)
            if out is False:
                break
        if out is head:
            out = Node(out, src=dict(out.src))     # the kept one stays as it is
        if out is not False:
            out.parts = _parts_of(schema) if isinstance(schema, dict) else None
        if type(schema) is Node:
            self._merged_nodes[(id(schema), origin)] = (schema, out)
        return out

    def _merged_head(self, schema: Any, origin: Tuple[str, str]) -> Tuple[int, Any]:
        """Where _merged's fold of schema may start: a conjunction node the compiler made
        (nothing but allOf) whose first conjunct, a node too, was merged before with the
        same origin. Its conjuncts (_flatten) are the node's own rest, which adds nothing,
        then that conjunct's, whose fold is the kept merge: so the fold goes on from it,
        past them. (The chains of if/then rewrites and anyOf products grow by one conjunct
        at a time, and each was merged whole again.) (0, None) where none is kept."""
        if type(schema) is not Node or len(schema) != 1 or "allOf" not in schema:
            return 0, None
        items = schema["allOf"]
        if type(items) is not list or not items or type(items[0]) is not Node:
            return 0, None
        first = items[0]
        got = self._merged_nodes.get((id(first), origin))
        flat = self._flat_nodes.get(id(first))
        if got is None or got[0] is not first or flat is None or flat[0] is not first:
            return 0, None
        return 1 + len(flat[1]), got[1]

    def _flatten(self, schema: Any, ptr: str, seen: tuple, origin: Tuple[str, str]) -> list:
        """The conjuncts of schema: nodes without allOf or $ref (False: impossible)."""
        if schema is True:
            return []
        if schema is False:
            return [False]
        if not isinstance(schema, dict):
            raise CompileError("a schema must be an object or a boolean", pointer=ptr)
        # a node the compiler made (a conjunction chain of _all_of, a merged node's rest) is
        # read again and again as the chains grow, each time to the same conjuncts when read
        # from the top (no $ref on the path: what is refused depends on the path): kept
        keep = not seen and type(schema) is Node
        if keep:
            got = self._flat_nodes.get(id(schema))
            if got is not None and got[0] is schema:
                return got[1]
        n = self._norm(schema, ptr)
        drop = _FOLDED
        if not _PARTNERED.isdisjoint(n):
            # keywords without their partner do nothing, but could pair with another part's
            idle = {k for k, partner in NEEDS_PARTNER.items() if k in n and partner not in n}
            if "if" in n and "then" not in n and "else" not in n:
                idle.add("if")
            drop = drop | idle
        # n less those keywords, as a Node (copied whole, then the few keys taken out: this
        # runs for every conjunct of every merge)
        rest = _new_dict(Node)
        _fill(rest, n)
        for k in drop:
            if k in rest:
                del rest[k]
        rest.src, rest.parts, rest.origin = n.src or {}, None, None
        out = [rest]
        if "allOf" in n:
            branches = n["allOf"]
            if not isinstance(branches, list) or not branches:
                raise CompileError("'allOf' must be a non-empty array", keyword="allOf",
                                   pointer=_ptr(ptr, "allOf"))
            for i, b in enumerate(branches):
                out.extend(self._flatten(b, _ptr(ptr, "allOf", i), seen, origin))
        if "$ref" in n:
            target, tptr = self._resolve(n["$ref"], ptr, self._kw(n, "$ref"))
            if tptr in seen or len(seen) > 32:
                raise CompileError("a reference that reaches itself through allOf / $ref "
                                   "siblings alone is not enforced", keyword=origin[0],
                                   pointer=origin[1])
            self._flat_depth = max(self._flat_depth, len(seen))
            out.extend(self._flatten_ref(target, tptr, seen + (tptr,), origin))
        if keep:
            self._flat_nodes[id(schema)] = (schema, out)
        return out

    def _flatten_ref(self, target: Any, tptr: str, seen: tuple, origin: Tuple[str, str]) -> list:
        """_flatten of a $ref target: its conjuncts are the same wherever it is used (a
        protocol's messages all extend one base, each the one before), so they are read once
        per compile. The checks of the path still hold for a reuse: a target whose flattening
        succeeded reaches no schema on the path to it (else it reaches itself), and the depth
        bound is checked against the deepest chain below it."""
        got = self._flat_refs.get(tptr)
        if got is not None and (got[1] is None or len(seen) + got[1] <= 32):
            if got[1] is not None:
                self._flat_depth = max(self._flat_depth, len(seen) + got[1])
            return got[0]
        outer, self._flat_depth = self._flat_depth, -1
        parts = self._flatten(target, tptr, seen, origin)
        deepest = self._flat_depth
        self._flat_depth = max(outer, deepest)
        self._flat_refs[tptr] = (parts, None if deepest < 0 else deepest - len(seen))
        return parts

    def _refuse_merge(self, what: str, ptr: str, origin: Tuple[str, str]):
        raise CompileError(f"'{origin[0]}': {what} cannot be merged into one schema exactly",
                           keyword=origin[0], pointer=origin[1])

    def _merge2(self, a: Node, b: Node, ptr: str, kw: Tuple[str, str]):
        """The schema meaning `a AND b` (both without allOf/$ref), False when nothing can
        satisfy both, CompileError when it cannot be written exactly. a is what _merged's
        fold made so far (an empty node, or _merge2's own result), b the next part."""
        if "if" in a and "if" in b and not all(_same(a.get(k), b.get(k))
                                               for k in ("if", "then", "else")):
            # one node holds one if/then/else: the second is written as its alternatives
            b = self._if_alternatives(b, ptr, kw)
            if b is False:
                return False
        out = Node(a, src=dict(a.src))
        for k, v in b.items():
            if k in _NOT_MERGED_HERE or k.startswith("x-"):
                continue
            if k in b.src:
                out.src[k] = b.src[k]
            if k not in out:
                out[k] = v
                continue
            w = out[k]
            if _same(w, v):
                continue
            if k == "type":
                ta = {w} if isinstance(w, str) else set(w) if isinstance(w, list) else None
                tb = {v} if isinstance(v, str) else set(v) if isinstance(v, list) else None
                if ta is None or tb is None:
                    self._refuse_merge("a malformed 'type'", ptr, kw)
                both = _types_overlap(ta, tb)
                if not both:
                    return False
                out[k] = [t for t in TYPES if t in both]
            elif k in ("required", ABSENT, EXCLUDE, NOT_LANGUAGES, PATTERNS) and \
                    isinstance(v, list) and isinstance(w, list):
                out[k] = w + [x for x in v if not any(_same(x, y) for y in w)]
            elif k in ("minLength", "minItems", "minProperties") and _is_count(v) and _is_count(w):
                out[k] = max(w, v)
            elif k in ("maxLength", "maxItems", "maxProperties") and _is_count(v) and _is_count(w):
                out[k] = min(w, v)
            elif k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum") \
                    and _is_bound(v) and _is_bound(w):
                tighter = numbers.tighter_bound(w, v, lower=k.endswith("inimum"))
                if tighter is None:
                    self._refuse_merge(f"two '{k}' bounds", ptr, kw)
                out[k] = tighter
            elif k == "multipleOf" and _is_bound(v) and _is_bound(w) and v > 0 and w > 0:
                fa, fb = numbers._spec_value(w), numbers._spec_value(v)
                if (fa / fb).denominator == 1:
                    out[k] = w
                elif (fb / fa).denominator == 1:
                    out[k] = v
                else:
                    common = _common_multiple(fa, fb)
                    if common is None:
                        self._refuse_merge("two 'multipleOf' divisors", ptr, kw)
                    out[k] = common
            elif k in ("enum", "const"):
                continue        # intersected below
            elif k in ("minContains", "maxContains") and "contains" in a and "contains" in b:
                continue        # settled below, with each side's default
            elif k == "pattern" and isinstance(v, str) and isinstance(w, str):
                # both: the product of the two languages (strings.excluding_string)
                extra = list(out.get(PATTERNS, []))
                if v not in extra:
                    out[PATTERNS] = extra + [v]
            elif k == "uniqueItems" and isinstance(v, bool) and isinstance(w, bool):
                out[k] = v or w
            elif k == "dependentRequired" and isinstance(v, dict) and isinstance(w, dict):
                out[k] = {n: list(dict.fromkeys(w.get(n, []) + v.get(n, []))) for n in {**w, **v}}
            elif k == "dependentSchemas" and isinstance(v, dict) and isinstance(w, dict):
                out[k] = {n: _all_of([w.get(n, True), v.get(n, True)], kw) for n in {**w, **v}}
            elif k == "propertyNames":
                out[k] = _all_of([w, v], kw)
            elif k == "not":
                out[k] = Node({"anyOf": [w, v]}, parts=None)
            elif k in ("anyOf", "oneOf") and isinstance(v, list) and isinstance(w, list):
                if k == "oneOf":
                    # oneOf AND oneOf: each provably disjoint -> anyOf each, then distribute
                    self._refuse_merge("two 'oneOf'", ptr, kw)
                out[k] = self._product(w, v, ptr, kw)
                if not out[k]:
                    return False
            else:
                self._refuse_merge(f"two different '{k}'", ptr, kw)
        if "contains" in a and "contains" in b:
            # one witness language (the same `contains`, or refused above): the counts of both
            # sides, each side's absent minContains meaning 1 and maxContains none
            for key, default, pick in (("minContains", 1, max), ("maxContains", None, min)):
                va, vb = a.get(key, default), b.get(key, default)
                if va is None or vb is None:
                    v = vb if va is None else va
                elif _is_count(va) and _is_count(vb):
                    v = pick(va, vb)
                else:
                    self._refuse_merge(f"two '{key}'", ptr, kw)
                if v is None or (key == "minContains" and v == 1):
                    out.pop(key, None)
                else:
                    out[key] = v
        values = [_values_of(a), _values_of(b)]
        if values[0] is not None or values[1] is not None:
            out.pop("const", None)
            out.pop("enum", None)
            known = [vs for vs in values if vs is not None]
            both = known[0] if len(known) == 1 else _json_among(known[0], known[1])
            if known[0] is values[0] and "const" in a and values[1] is None:
                out["const"] = a["const"]
            elif known[0] is values[1] and "const" in b and values[0] is None:
                out["const"] = b["const"]
            else:
                out["enum"] = both
        if not (_OBJECT_KEYSET.isdisjoint(a) and _OBJECT_KEYSET.isdisjoint(b)):
            if self._merge_objects(a, b, out, ptr, kw) is False:
                return False
        if not (_ARRAY_KEYSET.isdisjoint(a) and _ARRAY_KEYSET.isdisjoint(b)):
            self._merge_arrays(a, b, out, kw)
        return out

    def _if_alternatives(self, b: Node, ptr: str, kw: Tuple[str, str]):
        """b with its if/then/else written as anyOf[if AND then, NOT if AND else] (beside
        b's own anyOf: their product), False when neither can hold; refused when the
        negation of `if` cannot be written (see 'not')."""
        cond = b["if"]
        neg = self._negate(cond, ptr, 0, None)
        if neg is None:
            self._refuse_merge("two different 'if' (the negation of one cannot be written "
                               "as a schema)", ptr, kw)
        alts = [s for s in (_all_of([cond, b.get("then", True)], kw),
                            _all_of([neg, b.get("else", True)], kw)) if s is not False]
        out = Node({k: v for k, v in b.items() if k not in ("if", "then", "else")},
                   src=b.src, parts=None)
        own = out.get("anyOf")
        if isinstance(own, list):
            alts = self._product(own, alts, ptr, kw)
        if not alts:
            return False
        out["anyOf"] = alts
        return out

    def _product(self, w: list, v: list, ptr: str, kw: Tuple[str, str]) -> list:
        """anyOf w AND anyOf v as one anyOf: the pairs, less those proven to share no
        document (the facts of oneOf's disjointness); refused above MAX_VARIANTS."""
        if len(w) * len(v) <= 1:
            return [_all_of([x, y], kw) for x in w for y in v]
        fw = [self._facts(x, ptr, False) for x in w]
        fv = [self._facts(y, ptr, False) for y in v]
        out = [_all_of([x, y], kw) for i, x in enumerate(w) for j, y in enumerate(v)
               if not self._disjoint(fw[i], fv[j], y, x)]
        if len(out) > MAX_VARIANTS:
            self._refuse_merge("two large 'anyOf'", ptr, kw)
        return [s for s in out if s is not False]

    def _key_schemas(self, side: dict, name: str, ptr: str) -> list:
        """What side imposes on the value of key `name` (properties, patterns, or the rest)."""
        props = side.get("properties", {})
        res = [props[name]] if isinstance(props, dict) and name in props else []
        pats = side.get("patternProperties", {})
        matched = [s for p, s in pats.items() if _name_matches(p, name, ptr, self._regex_exprs)] \
            if isinstance(pats, dict) else []
        res += matched
        if not res and "additionalProperties" in side:
            res.append(side["additionalProperties"])
        return res

    def _key_lookup(self, side: dict, props: dict, ptr: str):
        """_key_schemas of side as a function of the name; without patterns (the common
        case) a dictionary lookup, read once per merge instead of per name."""
        if _has_patterns(side):
            return lambda name: self._key_schemas(side, name, ptr)
        rest = [side["additionalProperties"]] if "additionalProperties" in side else []
        return lambda name: [props[name]] if name in props else rest

    def _merge_objects(self, a: Node, b: Node, out: Node, ptr: str, kw: Tuple[str, str]):
        for k in _OBJECT_KEYS:
            out.pop(k, None)
        pa, pb = a.get("properties", {}), b.get("properties", {})
        if not isinstance(pa, dict) or not isinstance(pb, dict):
            self._refuse_merge("a malformed 'properties'", ptr, kw)
        if pa or pb:
            out["properties"] = self._merge_properties(a, b, pa, pb, ptr, kw)
        ppa, ppb = a.get("patternProperties"), b.get("patternProperties")
        aa, ab = a.get("additionalProperties", True), b.get("additionalProperties", True)
        if ppa and ppb:
            if not (_same(ppa, ppb) and _same(aa, ab)):
                self._refuse_merge("two 'patternProperties'", ptr, kw)
            out["patternProperties"], out["additionalProperties"] = ppa, aa
            return out
        if ppa or ppb:
            pp, mine, other = (ppa, aa, ab) if ppa else (ppb, ab, aa)
            if other is not True and other != {}:
                # a name that only matches a pattern of one side meets the other side's
                # additionalProperties: not one keyword any more
                self._refuse_merge("'patternProperties' beside the other side's "
                                   "'additionalProperties'", ptr, kw)
            out["patternProperties"] = pp
            if "additionalProperties" in a or "additionalProperties" in b:
                out["additionalProperties"] = mine
            return out
        if "additionalProperties" in a or "additionalProperties" in b:
            out["additionalProperties"] = _all_of([aa, ab], kw)
        return out

    def _merge_properties(self, a: Node, b: Node, pa: dict, pb: dict, ptr: str,
                          kw: Tuple[str, str]) -> dict:
        """The merged `properties` of a and b: each name's schemas on both sides (its own,
        the patterns it matches, else additionalProperties) as one conjunction."""
        ab = b.get("additionalProperties", True)
        if pa and not _has_patterns(a) and not _has_patterns(b) and \
                (ab is True or (isinstance(ab, dict) and _accepts_everything(ab))):
            # a is what the fold merged so far (_merge2): each of its members is what _all_of
            # made, which _all_of of it alone gives back, so a name b does not constrain
            # (b's additionalProperties, if any, allows everything) keeps it and only b's
            # names are merged (a fold over many parts merged every name again at each part)
            rest_a = [a["additionalProperties"]] if "additionalProperties" in a else []
            props = dict(pa)
            for n, v in pb.items():
                props[n] = _all_of(([pa[n]] if n in pa else rest_a) + [v], kw)
            return props
        of_a, of_b = self._key_lookup(a, pa, ptr), self._key_lookup(b, pb, ptr)
        names = list(pa) + [n for n in pb if n not in pa]
        return {n: _all_of(of_a(n) + of_b(n), kw) for n in names}

    def _merge_arrays(self, a: Node, b: Node, out: Node, kw: Tuple[str, str]) -> None:
        for k in _ARRAY_KEYS:
            out.pop(k, None)
        pa, pb = a.get("prefixItems", []), b.get("prefixItems", [])
        ia, ib = a.get("items", True), b.get("items", True)
        if not isinstance(pa, list) or not isinstance(pb, list):
            out["prefixItems"] = None       # malformed: refused by _array
            return
        n = max(len(pa), len(pb))
        if n:
            out["prefixItems"] = [_all_of([pa[i] if i < len(pa) else ia,
                                           pb[i] if i < len(pb) else ib], kw) for i in range(n)]
        if "items" in a or "items" in b:
            out["items"] = _all_of([ia, ib], kw)
