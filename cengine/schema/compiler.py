"""JSON Schema (drafts 04, 06, 07, 2019-09, 2020-12) -> grammar IR, enforcing every keyword it
accepts exactly.

Each schema node is first read in its draft (`drafts.normalize`: draft 2020-12 vocabulary,
keywords the draft does not define dropped as annotations and recorded). Then:

Enforced: type (all seven, unions), properties, required, additionalProperties,
patternProperties and propertyNames (where the key languages are exact, below),
minProperties / maxProperties (counted), dependentRequired / dependentSchemas (as variants
with the key present or absent), items, prefixItems, minItems, maxItems, enum, const,
minLength, maxLength, local $ref with $defs/definitions (recursion becomes recursive rules),
allOf (merged into one schema exactly, or refused), anyOf, oneOf (when its branches are
provably disjoint, where it equals anyOf), not and if/then/else (when the negation can be
written as a schema), boolean schemas, numeric bounds and multipleOf (numbers.py), pattern
(strings.py), format (formats.py: a documented set enforced, every other format an
annotation).
Every other keyword that the draft defines and that changes which documents are valid raises
CompileError naming the keyword and its JSON pointer. Nothing is ever weakened: where the
grammar departs from the specification it only accepts fewer documents (closed objects,
property order, canonical spellings of keys and enum strings, integers as integers), all
documented in docs/json-schema.md.

Shape: one rule per object/array (flagged `container`, so max_depth counts them), one rule
per $ref target and per merged conjunction (so recursion is a rule calling itself), shared
lexical rules from json_grammar (whitespace with the budget flag, one string body for all
free strings).
"""
from __future__ import annotations

import functools
import itertools
import json
import re
from typing import Any, Dict, List, Optional, Tuple

from .. import ir
from ..ir import UNROLL_INLINE_MAX
from . import drafts
from . import json_grammar
from . import keys
from . import formats
from . import numbers
from . import strings
from .drafts import IgnoredKeyword, Node
from .drafts import pointer as _ptr
from .conjunction import Conjunction, _accepts_everything, _all_of
from .enums import Enums
from .negation import Negation
from .refs import References
from .pattern_names import _key_alphabet, _name_matches, _universal_pattern
from .vocabulary import (ABSENT, ANNOTATIONS, ENFORCED, EXCLUDE, MAX_VARIANTS, NEEDS_PARTNER,
                         TYPES, _is_annotation, _is_count, _is_type, _json_in,
                         _same)
from ..errors import CompileError, LimitError

# minItems/maxItems are unrolled into copies: same cap as GBNF repetition (string lengths:
# json_grammar.MAX_STRING_LENGTH)
MAX_UNROLL = 4096


# (property index, count) states of an object with minProperties/maxProperties
MAX_COUNT_STATES = 1024

# property_order: "declared" (the default, what generation should write: declared properties
# in the schema's order, extra keys last) or "any" (every order, each declared name at most
# once). "any" needs one state per subset of the declared properties written (times the member
# count when min/maxProperties count extra keys too): at most MAX_ORDER_STATES of them; a larger
# object keeps its declared properties in declared order, extra keys anywhere between them
PROPERTY_ORDERS = ("declared", "any")
MAX_ORDER_STATES = 1024

# the keyword a limit met while building a rule of this kind names (others: the keyword whose
# value holds the rule's schema, from its pointer)
_RULE_KEYWORDS = {"object": "properties", "after": "properties",
                  "extra-member": "additionalProperties", "all": "allOf", "enum": "enum",
                  "const": "const"}


# keywords that are refused, with the instance types they constrain (None: every type)
TYPE_SPECIFIC = {
    "uniqueItems": ("array",), "contains": ("array",), "unevaluatedItems": ("array",),
    "patternProperties": ("object",), "propertyNames": ("object",),
    "dependentRequired": ("object",), "dependentSchemas": ("object",),
    "minProperties": ("object",), "maxProperties": ("object",),
    "unevaluatedProperties": ("object",),
}


# compile() reads a node's other keywords only when one of these is present
_DISPATCHED = frozenset({"$id", "enum", "const", "allOf", "$ref", "not", "if", "oneOf", "anyOf"})


_ENFORCED_OR_ANNOTATION = ENFORCED | ANNOTATIONS
_ENFORCED_VALIDATING = ENFORCED - {"$id"}

# _types of a node without `type` or with one type name
_NO_TYPE = object()
_TYPES_OF = {name: (name,) for name in TYPES}
_TYPES_OF[_NO_TYPE] = ("object", "array", "string", "number", "boolean", "null")


_SLUG_WORD = re.compile(r"[A-Za-z0-9]+")


@functools.lru_cache(maxsize=4096)
def _slug(ptr: str) -> str:
    """The pointer as a rule-name part (several rules are named from one pointer, and the same
    pointers recur across schemas: /properties/name)."""
    # most pointers are ASCII letters and digits between single slashes: each run of other
    # characters is one '/' or '-' there, which the substitution below leaves one '-'
    dashed = ptr.replace("/", "-")
    core = dashed.replace("-", "")
    if core.isascii() and core.isalnum() and "--" not in dashed:
        return dashed.strip("-")[:80] or "root"
    # each run of other characters one '-', none at the ends: the letter-and-digit runs
    # joined by '-'
    return "-".join(_SLUG_WORD.findall(ptr))[:80] or "root"


def _is_validating(key: str) -> bool:
    """The keyword can change validity (not an annotation, not `$id`)."""
    return key != "$id" and not _is_annotation(key)


def _is_noop(key: str, val: Any) -> bool:
    """Refused keywords whose value makes them impose nothing."""
    if key == "uniqueItems":
        return val is False
    if key == "minProperties":
        return _is_count(val) and val == 0
    if key in ("patternProperties", "dependentRequired", "dependentSchemas"):
        return val == {}
    if key in ("propertyNames", "unevaluatedProperties", "unevaluatedItems"):
        return val is True or val == {}
    return False


class _Places:
    """The place of objects in the document root, by identity (the first place found when
    one object stands in several), as a chain (parent's place, token), None for the root:
    _place_pointer spells it. Only the places asked for are spelled (a document has
    thousands of objects, and a compile asks for a few), and the walk over the document,
    in document order, goes only as far as the objects asked for so far (most are met
    early, or are the root itself); it resumes where it stopped, so each place is the
    one a whole walk would have recorded first."""
    __slots__ = ("places", "stack")

    def __init__(self, root: Any):
        self.places: Dict[int, Optional[tuple]] = {}
        self.stack = [(root, None)]

    def get(self, node: Any):
        """node's place, or False when it is no object of the document."""
        places = self.places
        got = places.get(id(node), False)
        if got is not False:
            return got
        want = id(node)
        stack = self.stack
        pop, push = stack.pop, stack.append
        while stack:
            x, where = pop()
            if isinstance(x, dict):
                if id(x) in places:
                    continue
                places[id(x)] = where
                # pushed last to first: popped in document order
                for k, v in reversed(x.items()):
                    if isinstance(v, (dict, list)):
                        push((v, (where, k)))
                if id(x) == want:
                    return where
            elif isinstance(x, list):
                for i in range(len(x) - 1, -1, -1):
                    v = x[i]
                    if isinstance(v, (dict, list)):
                        push((v, (where, i)))
        return False


def _place_pointer(where: Optional[tuple]) -> str:
    """The JSON pointer of a place _Places found."""
    tokens = []
    while where is not None:
        where, t = where
        tokens.append(t)
    return _ptr("", *reversed(tokens))


class _Compiler(References, Conjunction, Negation, Enums):
    def __init__(self, g: ir.GrammarIR, root: Any, prefix: str, closed_objects: bool,
                 property_order: str = "declared"):
        self.g = g
        self.root = root
        self.prefix = prefix
        self.closed = closed_objects
        self.any_order = property_order == "any"
        self.draft = drafts.draft_of(root)
        self.ignored: List[IgnoredKeyword] = []
        self.ref_rules: Dict[str, str] = {}
        self.conj_rules: Dict[str, str] = {}
        # _flatten_ref: $ref target pointer -> (its conjuncts, depth of the chain below it)
        self._flat_refs: Dict[str, Tuple[list, Optional[int]]] = {}
        self._flat_depth = -1
        # _property_value: id of a document's schema object -> (it, its expression)
        self._property_values: Dict[int, Tuple[dict, ir.Expr]] = {}
        self._regex_exprs: Dict[str, ir.Expr] = {}   # _pattern_expr, _pattern_language
        self._validator = None
        self.number_rules: Dict = {}
        self.shared_strings: Dict[tuple, str] = {}      # (kind, format/pattern, lo, hi) -> rule
        self.shared_parts: Dict[tuple, str] = {}        # (kind, expression) -> object part rule
        self.shared_keys: List[ir.Expr] = []            # extra keys shared_parts keys by id
        # _object_expr_any_order: (name, id of the value expression) -> (it, member rule)
        self._member_rules: Dict[Tuple[str, int], Tuple[ir.Expr, str]] = {}
        # _member_rule: the colon expression last seen, and its items when a member spelled
        # with it is the literal, its items and the call (None: ir.seq joins them)
        self._member_col: Optional[ir.Expr] = None
        self._json_texts: Dict[int, Tuple[Any, str]] = {}     # _json_text
        self._member_col_items: Optional[tuple] = None
        self._embedded: Optional[bool] = None
        self._places: Optional[_Places] = None

    # --- helpers ------------------------------------------------------------------------
    def _rule_name(self, ptr: str, kind: str, keyword: Optional[str] = None) -> str:
        """A fresh rule name for the schema at ptr; keyword (default: by kind) is what a limit
        met while building the rule names, with its pointer (GrammarIR.sources)."""
        name = f"{self.prefix}{_slug(ptr)}-{kind}"
        if name in self.g.rules:
            name = self.g.fresh_name(name)
        if not keyword:
            keyword = _RULE_KEYWORDS.get(kind)
            if keyword is None and kind.startswith("after"):
                keyword = _RULE_KEYWORDS["after"]
        if keyword is not None:
            # drafts.pointer's spelling, inline for a keyword that needs no escape
            where = ptr + "/" + keyword if "~" not in keyword and "/" not in keyword \
                else _ptr(ptr, keyword)
        else:
            # the schema's own keyword when ptr ends in one (/properties/a: "properties")
            parent, _, last = ptr.rpartition("/")
            keyword, where = parent.rpartition("/")[2] if parent else (last or None), ptr
        self.g.sources[name] = (keyword, where)
        return name

    def _count(self, schema: dict, key: str, ptr: str) -> Optional[int]:
        if key not in schema:
            return None
        v = schema[key]
        if not _is_count(v):
            raise CompileError(f"'{key}' must be a non-negative integer", keyword=key,
                               pointer=_ptr(ptr, key))
        return int(v)

    def _check_unroll(self, n: Optional[int], key: str, ptr: str) -> None:
        if n is not None and n > MAX_UNROLL:
            raise LimitError(f"'{key}' of {n} exceeds the documented limit of {MAX_UNROLL}",
                             keyword=key, pointer=_ptr(ptr, key))

    def _check_length(self, n: Optional[int], key: str, ptr: str) -> None:
        # string bounds past json_grammar.UNROLL_LENGTH_MAX are counted in blocks, not unrolled
        if n is not None and n > json_grammar.MAX_STRING_LENGTH:
            raise LimitError(f"'{key}' of {n} exceeds the documented limit of "
                             f"{json_grammar.MAX_STRING_LENGTH}", keyword=key,
                             pointer=_ptr(ptr, key))

    def _types(self, schema: dict, ptr: str) -> Tuple[str, ...]:
        """The types a node's documents may have, in TYPES order (number covers integer)."""
        t = schema.get("type", _NO_TYPE)
        # one type name (most nodes) or none: the answer is a constant
        out = _TYPES_OF.get(t) if type(t) is str or t is _NO_TYPE else None
        if out is not None:
            return out
        ts = [t] if isinstance(t, str) else t
        if not isinstance(ts, list) or not ts or any(x not in TYPES for x in ts):
            raise CompileError(f"'type' must be one of {', '.join(TYPES)} or a list of them",
                               keyword="type", pointer=_ptr(ptr, "type"))
        out = [x for x in TYPES if x in ts]
        if "number" in out and "integer" in out:
            out.remove("integer")
        return tuple(out)

    def _validating_keys(self, schema: dict) -> List[str]:
        return [k for k in schema if _is_validating(k)]

    def _has_validating_key(self, schema: dict) -> bool:
        # _validating_keys is not empty: an enforced keyword (usually `type`) answers at once
        if not _ENFORCED_VALIDATING.isdisjoint(schema):
            return True
        return any(map(_is_validating, schema))

    def _kw(self, schema: dict, key: str) -> str:
        """The keyword as written in the schema (a draft rewrite may have renamed it)."""
        return schema.src.get(key, key) if isinstance(schema, Node) else key

    def _check_keywords(self, schema: dict, ptr: str, types: Tuple[str, ...]) -> None:
        """Refuse every keyword that would change validity and is not enforced here."""
        if _ENFORCED_OR_ANNOTATION.issuperset(schema):
            return              # most nodes: no keyword to look at one by one
        for k, v in schema.items():
            if k in ENFORCED or _is_annotation(k):
                continue
            if k in NEEDS_PARTNER and NEEDS_PARTNER[k] not in schema:
                continue        # e.g. 'then' without 'if' is ignored by the spec
            if k in TYPE_SPECIFIC and not set(TYPE_SPECIFIC[k]) & set(types):
                continue        # constrains a type this schema excludes anyway
            if _is_noop(k, v):
                continue
            raise CompileError(f"keyword '{k}' is not enforced", keyword=k, pointer=_ptr(ptr, k))

    def _norm(self, schema: dict, ptr: str) -> Node:
        """The node in 2020-12 vocabulary (unknown keywords recorded as ignored)."""
        if isinstance(schema, Node):
            return schema
        mark = len(self.ignored)
        n = drafts.normalize(schema, self.draft, ptr, self.ignored)
        if len(self.ignored) > mark:
            self._locate_ignored(schema, ptr, mark)
        if "$recursiveRef" in n:
            # without embedded resources the dynamic scope has one resource, the root, so
            # "$recursiveRef": "#" is "$ref": "#" whatever the $recursiveAnchors say
            if n["$recursiveRef"] != "#" or "$ref" in n or self._embedded_ids():
                raise CompileError("'$recursiveRef' is enforced only as '#' in a schema "
                                   "without embedded resources ($id below the root)",
                                   keyword="$recursiveRef", pointer=_ptr(ptr, "$recursiveRef"))
            n["$ref"] = n.pop("$recursiveRef")
            n.src["$ref"] = "$recursiveRef"
        return n

    def _locate_ignored(self, node: dict, ptr: str, mark: int) -> None:
        """The ignored keywords recorded from mark on (of node, read at ptr) name node's place
        in the document: analyses (oneOf branches, discriminators) and rewrites (not, if,
        oneOf as anyOf) read nodes under pointers of their own, and which of them run first
        could depend on set order, so the record depended on the process."""
        if self._places is None:
            self._places = _Places(self.root)
        place = self._places.get(node)
        if place is False:
            return
        where = _place_pointer(place)
        if where == ptr:
            return
        for i in range(mark, len(self.ignored)):
            k = self.ignored[i]
            self.ignored[i] = IgnoredKeyword(k.keyword, where + k.pointer[len(ptr):], k.why)


    # --- entry ---------------------------------------------------------------------------
    def compile(self, schema: Any, ptr: str) -> ir.Expr:
        if schema is True:
            return json_grammar.value(self.g)
        if schema is False:
            return ir.NOTHING
        if not isinstance(schema, dict):
            raise CompileError("a schema must be an object or a boolean", pointer=ptr)
        schema = self._norm(schema, ptr)
        if not _DISPATCHED.isdisjoint(schema):
            # the keywords that make a node something other than its types' alternatives
            if "$id" in schema and ptr != "" and isinstance(schema["$id"], str) and \
                    not schema["$id"].startswith("#") and self._uses_ref(schema):
                # an embedded resource changes what '#...' means below it: not followed here
                raise CompileError("'$id' of a schema that uses '$ref' below the root is not "
                                   "supported", keyword=self._kw(schema, "$id"),
                                   pointer=_ptr(ptr, self._kw(schema, "$id")))
            if "enum" in schema or "const" in schema:
                return self._enum(schema, ptr)
            if "allOf" in schema or ("$ref" in schema and
                                     [k for k in self._validating_keys(schema) if k != "$ref"]):
                return self._conj_rule(schema, ptr, "allOf" if "allOf" in schema else "$ref")
            if "$ref" in schema:
                return self._ref(schema["$ref"], ptr)
            if "not" in schema:
                return self.compile(self._apply_not(schema, ptr), ptr)
            if "if" in schema and ("then" in schema or "else" in schema):
                return self.compile(self._apply_if(schema, ptr), ptr)
            if "oneOf" in schema:
                return self.compile(self._one_of(schema, ptr), ptr)
            if "anyOf" in schema:
                return self._any_of(schema, ptr)
        types = self._types(schema, ptr)
        self._check_keywords(schema, ptr, types)
        if "object" in types and (
                ("dependentRequired" in schema and
                 not _is_noop("dependentRequired", schema["dependentRequired"])) or
                ("dependentSchemas" in schema and
                 not _is_noop("dependentSchemas", schema["dependentSchemas"]))):
            return self._dependent(schema, ptr)
        if not self._has_validating_key(schema):
            return json_grammar.value(self.g)
        alts = []
        for t in types:
            if t == "object":
                alts.append(self._object(schema, ptr))
            elif t == "array":
                alts.append(self._array(schema, ptr))
            elif t == "string":
                alts.append(self._string(schema, ptr))
            elif t in ("number", "integer"):
                alts.append(self._number(schema, ptr, integer=(t == "integer")))
            elif t == "boolean":
                alts.append(self._boolean(schema))
            else:
                alts.append(ir.NOTHING if _json_in(None, schema.get(EXCLUDE, []))
                            else json_grammar.null(self.g))
        return ir.alt(*alts)

    def _boolean(self, schema: dict) -> ir.Expr:
        out = schema.get(EXCLUDE, [])
        if not out:
            return json_grammar.boolean(self.g)
        return ir.alt(*(ir.lit(json.dumps(b)) for b in (True, False) if not _json_in(b, out)))


    # --- anyOf -----------------------------------------------------------------------------
    def _without(self, schema: Node, *keys: str) -> Node:
        """schema minus keys; it still stands for its original (minus the same keys) when it
        is a draft rewrite of one original schema."""
        parts = None
        if schema.parts is not None and len(schema.parts) == 1 and \
                all(self._kw(schema, k) == k for k in keys) and \
                set(schema.parts[0]) >= set(k for k in keys if k in schema):
            orig = schema.parts[0]
            if all(schema.get(k) is orig.get(k) for k in schema if k in orig) and \
                    all(k in schema or _is_annotation(k) or k in keys for k in orig
                        if k in drafts.KEYWORDS[self.draft]):
                parts = [{k: v for k, v in orig.items() if k not in keys}]
        return Node({k: v for k, v in schema.items() if k not in keys}, src=schema.src, parts=parts)

    def _any_of(self, schema: Node, ptr: str) -> ir.Expr:
        branches = schema["anyOf"]
        if not isinstance(branches, list) or not branches:
            raise CompileError("'anyOf' must be a non-empty array", keyword="anyOf",
                               pointer=_ptr(ptr, "anyOf"))
        if [k for k in self._validating_keys(schema) if k != "anyOf"]:
            # S AND anyOf[B..] == anyOf[S AND B, ..]
            rest = self._without(schema, "anyOf")
            origin = ("anyOf", _ptr(ptr, "anyOf"))
            return ir.alt(*(self.compile(_all_of([rest, b], origin), _ptr(ptr, "anyOf", i))
                            for i, b in enumerate(branches)))
        return ir.alt(*(self.compile(b, _ptr(ptr, "anyOf", i)) for i, b in enumerate(branches)))


    # --- dependentRequired / dependentSchemas: variants with each key there or not -----------
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

    # --- numbers ---------------------------------------------------------------------------
    def _number(self, schema: dict, ptr: str, integer: bool) -> ir.Expr:
        if EXCLUDE in schema and any(_is_type(v, "number") for v in schema[EXCLUDE]):
            raise CompileError("'not' of a number value is not enforced", keyword="not",
                               pointer=ptr)
        if not numbers.has_numeric_keywords(schema):
            return json_grammar.integer(self.g) if integer else json_grammar.number(self.g)
        try:
            return numbers.number_expr(self.g, schema, ptr, integer=integer,
                                  name=self._rule_name(ptr, "integer" if integer else "number"),
                                  cache=self.number_rules)
        except CompileError as e:
            kw = self._kw(schema, e.keyword) if e.keyword else None
            if kw == e.keyword:
                raise
            # a draft-04 boolean exclusive bound: name the keyword as written
            raise type(e)(e.reason, keyword=kw, pointer=_ptr(ptr, kw)) from None

    # --- strings ---------------------------------------------------------------------------
    def _format(self, schema: dict, ptr: str) -> Optional[ir.Expr]:
        """The decoded language of an enforced format; None when absent or an annotation."""
        if "format" not in schema:
            return None
        name = schema["format"]
        if not isinstance(name, str):
            raise CompileError("'format' must be a string", keyword="format",
                               pointer=_ptr(ptr, "format"))
        if name in formats.UNENFORCEABLE:
            raise CompileError(f"format '{name}' is not enforced: {formats.UNENFORCEABLE[name]}",
                               keyword="format", pointer=_ptr(ptr, "format"))
        return formats.format_expr(name)

    def _string(self, schema: dict, ptr: str) -> ir.Expr:
        lo = self._count(schema, "minLength", ptr) or 0
        hi = self._count(schema, "maxLength", ptr)
        out = [v for v in schema.get(EXCLUDE, []) if isinstance(v, str)]
        fmt = self._format(schema, ptr)
        if out and (fmt is not None or "pattern" in schema or lo or hi is not None):
            raise CompileError("'not' of a string value beside string keywords is not enforced",
                               keyword="not", pointer=ptr)
        if out:
            return json_grammar.string_not_in(self.g, list(dict.fromkeys(out)))
        if fmt is not None:
            if "pattern" in schema:
                raise CompileError("'pattern' beside an enforced 'format' is not enforced",
                                   keyword="pattern", pointer=_ptr(ptr, "pattern"))
            return self._shared_string(
                ("format", schema["format"], lo, hi), ptr,
                lambda: strings.format_string(schema["format"], lo, hi, ptr, self.g))
        if "pattern" in schema:
            return self._shared_string(
                ("pattern", schema["pattern"], lo, hi), ptr,
                lambda: strings.constrained_string(strings.pattern_expr(schema["pattern"], ptr),
                                                   lo, hi, ptr, "pattern", self.g))
        self._check_length(lo, "minLength", ptr)
        self._check_length(hi, "maxLength", ptr)
        return json_grammar.bounded_string(self.g, lo, hi)

    def _shared_string(self, key: tuple, ptr: str, make) -> ir.Expr:
        """The string of a format or pattern (with length bounds), one rule per distinct key
        in the grammar: the builder inlines a short one back into its callers (as any rule
        matching at most INLINE_MAX_MATCH bytes), and a long one (an email address, a
        255-character class run) is built once and called, not copied into every object
        that has such a property."""
        name = self.shared_strings.get(key)
        if name is None:
            expr = make()
            if isinstance(expr, (ir.Ref, ir.Nothing)):
                return expr
            # named (and its limits located) where it was first met
            name = self._rule_name(ptr, f"{key[0]}-string", key[0])
            self.g.add(name, expr)
            self.shared_strings[key] = name
        return ir.ref(name)

    # --- arrays ----------------------------------------------------------------------------
    def _array(self, schema: dict, ptr: str) -> ir.Expr:
        g = self.g
        if EXCLUDE in schema and any(isinstance(v, list) for v in schema[EXCLUDE]):
            raise CompileError("'not' of an array value is not enforced", keyword="not",
                               pointer=ptr)
        prefix = schema.get("prefixItems", [])
        pkw = self._kw(schema, "prefixItems")
        if not isinstance(prefix, list):
            raise CompileError("'prefixItems' must be an array of schemas", keyword=pkw,
                               pointer=_ptr(ptr, pkw))
        items = schema.get("items", True)
        ikw = self._kw(schema, "items")
        if not isinstance(items, (dict, bool)):
            raise CompileError("'items' must be a schema (array form is draft 2019 and older)",
                               keyword=ikw, pointer=_ptr(ptr, ikw))
        lo = self._count(schema, "minItems", ptr) or 0
        hi = self._count(schema, "maxItems", ptr)
        elems = [self.compile(p, _ptr(ptr, pkw, i)) for i, p in enumerate(prefix)]
        rest = self.compile(items, _ptr(ptr, ikw))
        # an impossible element caps the length before it
        for i, e in enumerate(elems):
            if isinstance(e, ir.Nothing):
                hi = i if hi is None else min(hi, i)
                elems = elems[:i]
                break
        else:
            if isinstance(rest, ir.Nothing):
                hi = len(elems) if hi is None else min(hi, len(elems))
        if hi is not None and hi < lo:
            return ir.NOTHING
        self._check_unroll(lo, "minItems", ptr)
        self._check_unroll(hi if hi is not None and hi > len(elems) else None, "maxItems", ptr)
        k = len(elems)
        sep = json_grammar.comma(g)
        # the keyword a limit met while building the array's rules names
        size_kw = "maxItems" if hi is not None else "minItems" if lo else ikw
        run_item = ir.seq(sep, rest)
        if max(lo, hi or 0) - k > UNROLL_INLINE_MAX and not isinstance(rest, ir.Ref):
            # a long counted run of an element written inline (a pattern string, an enum, a
            # bounded number) would be that many copies of its positions (maxItems 1000 of a
            # 24-character pattern: over 400,000); as a rule, the build keeps the run as calls
            run_item = g.add(self._rule_name(ptr, "item", size_kw), run_item)

        def elem(i: int) -> ir.Expr:
            return elems[i] if i < k else rest

        def tail(i: int) -> ir.Expr:
            # elements i.. when element i-1 has been written (each one after a comma)
            if hi is not None and i >= hi:
                return ir.EMPTY
            if i < k:
                e = ir.seq(sep, elems[i], tail(i + 1))
                return e if i < lo else ir.opt(e)
            n_hi = None if hi is None else hi - i
            return ir.repeat(run_item, max(lo - i, 0), n_hi)

        members = ir.NOTHING if hi == 0 else ir.seq(elem(0), tail(1))
        tail = None     # unbound: it calls itself through its cell (a cycle)
        expr = json_grammar.container(g, "[", members, "]", nullable_members=(lo == 0))
        # schemas repeat arrays too (a list of strings in every rule of a linter's config):
        # equal ones are one rule
        return ir.ref(self._object_part(ptr, "array", expr, container=True, keyword=size_kw))

    # --- objects ---------------------------------------------------------------------------
    def _value_expr(self, schema: Any, ptr: str) -> ir.Expr:
        return json_grammar.value(self.g) if schema is True else self.compile(schema, ptr)

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
        if narrow:
            if len(narrow) > 1 and not all(_same(pats[p], pats[narrow[0]]) for p in narrow):
                raise CompileError("several 'patternProperties' patterns with different schemas "
                                   "(a name may match more than one)", keyword="patternProperties",
                                   pointer=pp_ptr)
            language = ir.alt(*(self._pattern_language(p, pp_ptr) for p in narrow))
            matched = _all_of([pats[narrow[0]]] + every, ("patternProperties", pp_ptr))
            for value_schema, negate, where in ((matched, False, _ptr(pp_ptr, narrow[0])),
                                                (rest_value, True, addl_ptr)):
                value = self._value_expr(value_schema, where)
                if isinstance(value, ir.Nothing):
                    continue
                key = keys.key_expr(g, self._rule_name(where, "key"), language, declared,
                                  negate=negate, keyword="patternProperties", pointer=pp_ptr,
                                  alphabet=_key_alphabet(narrow))
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


def check_property_order(property_order: str) -> str:
    if property_order not in PROPERTY_ORDERS:
        raise ValueError(f"property_order must be one of "
                         f"{', '.join(map(repr, PROPERTY_ORDERS))}, not {property_order!r}")
    return property_order


def add_schema(g: ir.GrammarIR, schema: Any, *, prefix: str, closed_objects: bool = True,
               property_order: str = "declared") -> ir.Expr:
    """Add the rules of `schema` to g (names start with prefix) and return the expression
    matching one instance. `True` / `{}` is any JSON value; local $refs resolve against schema.
    property_order: "declared" (the schema's order) or "any" (PROPERTY_ORDERS)."""
    c = _Compiler(g, schema, prefix, closed_objects, check_property_order(property_order))
    if isinstance(schema, bool):
        return c.compile(schema, "")
    expr = c.rule_for(schema, "")
    # keywords the schema's draft does not define (annotations), once each, in schema order
    seen = set(g.ignored_keywords)
    g.ignored_keywords = tuple(g.ignored_keywords) + tuple(
        k for k in dict.fromkeys(c.ignored) if k not in seen)
    return expr


def schema_to_ir(schema: Any, *, closed_objects: bool = True, whitespace_budget: Optional[int] = 64,
                 max_depth: int = 64, surrounding_whitespace: bool = True,
                 property_order: str = "declared") -> ir.GrammarIR:
    """The whole document: optional whitespace, one instance of schema, optional whitespace
    (without surrounding_whitespace: the instance alone, so generation ends with its root)."""
    g = ir.GrammarIR()
    w = json_grammar.ws(g) if surrounding_whitespace else None
    body = add_schema(g, schema, prefix="s-", closed_objects=closed_objects,
                      property_order=property_order)
    g.add("root", ir.seq(w, body, w) if w is not None else body)
    g.root = "root"
    g.whitespace_budget = whitespace_budget
    g.max_depth = max_depth
    if "root" not in ir.productive_rules(g, json_grammar.productive_fixed_rules(g)):
        raise CompileError("the schema accepts no finite JSON document (false schema, an "
                           "impossible constraint, or a required endless recursion)", pointer="")
    return g
