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

Parts: this module holds the entry points (schema_to_ir, add_schema, check_property_order)
and _Compiler's dispatch over a node's keywords (compile), with what is left small: the
keyword checks, anyOf, booleans, null, numbers, strings and arrays. _Compiler is composed of
one mixin per concern, each in its module: References (refs.py: $ref), Conjunction
(conjunction.py: allOf and $ref beside siblings, merged), Negation (negation.py: not,
if/then/else, oneOf), Enums (enums.py: enum / const and the validator of single values),
Objects (objects.py: properties to member order). __init__ below holds the state of one
compile for all of them; vocabulary.py the keywords and value tests they share.
"""
from __future__ import annotations

import functools
import json
import math
import re
from typing import Any, Dict, List, NoReturn, Optional, Tuple

from .. import ir
from ..ir import UNROLL_INLINE_MAX
from . import drafts
from . import formats
from . import json_grammar
from . import numbers
from . import strings
from .conjunction import Conjunction, _all_of
from .drafts import IgnoredKeyword, Node
from .drafts import pointer as _ptr
from .enums import Enums
from .negation import Negation
from .objects import MAX_ORDER_STATES, Objects
from .refs import References
from .vocabulary import (ANNOTATIONS, CONTAINS, ENFORCED, EXCLUDE, FRACTION, MAX_WITNESS_BOUND,
                         NEEDS_PARTNER, NOT_LANGUAGES, PATTERNS, TYPES,
                         _is_annotation,
                         _is_count, _is_type, _json_in, _type_list)
from ..errors import CompileError, LimitError

# minItems/maxItems are unrolled into copies: same cap as GBNF repetition (string lengths:
# json_grammar.MAX_STRING_LENGTH)
MAX_UNROLL = 4096

# property_order: "declared" (the default, what generation should write: declared properties
# in the schema's order, extra keys last) or "any" (every order, each declared name at most
# once; objects.MAX_ORDER_STATES bounds its states)
PROPERTY_ORDERS = ("declared", "any")

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


class _Compiler(References, Conjunction, Negation, Enums, Objects):
    """One compile of one schema document into g: compile() dispatches a node to its part."""

    def __init__(self, g: ir.GrammarIR, root: Any, prefix: str, closed_objects: bool,
                 property_order: str = "declared"):
        self.g = g
        self.root = root
        self.prefix = prefix
        self.closed = closed_objects
        self.any_order = property_order == "any"
        self.draft = drafts.draft_of(root)
        self.ignored: List[IgnoredKeyword] = []
        self._places: Optional[_Places] = None
        self._regex_exprs: Dict[str, ir.Expr] = {}   # _pattern_expr, _pattern_language
        self.number_rules: Dict = {}
        self.shared_strings: Dict[tuple, str] = {}      # (kind, format/pattern, lo, hi) -> rule
        # refs.py
        self.ref_rules: Dict[str, str] = {}
        self._embedded: Optional[bool] = None
        self._anchors: Optional[Dict[str, List[Tuple[Any, str, str]]]] = None   # _anchor
        # conjunction.py
        self.conj_rules: Dict[str, str] = {}      # _json_text of the conjunction -> rule
        # _flatten_ref: $ref target pointer -> (its conjuncts, depth of the chain below it)
        self._flat_refs: Dict[str, Tuple[list, Optional[int]]] = {}
        self._flat_depth = -1
        # _flatten: id of a node the compiler made -> (it, its conjuncts) read from the top
        self._flat_nodes: Dict[int, Tuple[dict, list]] = {}
        # _merged: (id of a node the compiler made, origin) -> (it, its merge)
        self._merged_nodes: Dict[Tuple[int, Tuple[str, str]], Tuple[dict, Any]] = {}
        self._json_texts: Dict[int, Tuple[Any, str]] = {}     # _json_text
        # negation.py: _facts by (id of the schema, ptr, closed, depth) -> (it, its facts)
        self._facts_memo: Dict[tuple, tuple] = {}
        # enums.py
        self._validator = None
        # objects.py
        # _property_value: id of a document's schema object -> (it, its expression)
        self._property_values: Dict[int, Tuple[dict, ir.Expr]] = {}
        self.shared_parts: Dict[tuple, str] = {}        # (kind, expression) -> object part rule
        self.shared_keys: List[ir.Expr] = []            # extra keys shared_parts keys by id
        # _object_expr_any_order: (name, id of the value expression) -> (it, member rule)
        self._member_rules: Dict[Tuple[str, int], Tuple[ir.Expr, str]] = {}
        # _member_rule: the colon expression last seen, and its items when a member spelled
        # with it is the literal, its items and the call (None: ir.seq joins them)
        self._member_col: Optional[ir.Expr] = None
        self._member_col_items: Optional[tuple] = None

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

    def _without(self, schema: Node, *keys: str) -> Node:
        """schema minus keys (anyOf, oneOf, not, if and the dependencies compile the rest beside
        them); it still stands for its original (minus the same keys) when it is a draft
        rewrite of one original schema."""
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
            if k == "uniqueItems":
                continue        # _array enforces it or refuses it
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
        if "$dynamicRef" in n:
            # likewise (2020-12): with the root the only resource in the dynamic scope, the
            # outermost schema declaring the $dynamicAnchor is the one a static $ref finds
            ref = n["$dynamicRef"]
            if not isinstance(ref, str) or not ref.startswith("#") or "$ref" in n or \
                    self._embedded_ids():
                raise CompileError("'$dynamicRef' is enforced only as a fragment ('#...') "
                                   "without '$ref' beside it, in a schema without embedded "
                                   "resources ($id below the root)", keyword="$dynamicRef",
                                   pointer=_ptr(ptr, "$dynamicRef"))
            n["$ref"] = n.pop("$dynamicRef")
            n.src["$ref"] = "$dynamicRef"
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
                return self._ref(schema["$ref"], ptr, self._kw(schema, "$ref"))
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

    # --- numbers ---------------------------------------------------------------------------
    def _number(self, schema: dict, ptr: str, integer: bool) -> ir.Expr:
        if EXCLUDE in schema and any(_is_type(v, "number") for v in schema[EXCLUDE]):
            raise CompileError("'not' of a number value is not enforced", keyword="not",
                               pointer=ptr)
        if schema.get(FRACTION):
            # a number that is no integer (not: {type: integer})
            if integer:
                return ir.NOTHING
            if numbers.has_numeric_keywords(schema):
                raise CompileError("'not' of 'type: integer' beside numeric keywords is not "
                                   "enforced", keyword="not", pointer=ptr)
            return json_grammar.fraction(self.g)
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
        nots = schema.get(NOT_LANGUAGES, [])
        more = schema.get(PATTERNS, [])
        if nots or more or \
                (out and (fmt is not None or "pattern" in schema or lo or hi is not None)):
            # a language minus others (not/pattern, not/format), two patterns, or values
            # excluded beside string keywords: the product of their DFAs over code points
            # (strings.excluding_string)
            for lang, value in nots:
                if lang == "format" and value in formats.UNENFORCEABLE:
                    self._format({"format": value}, ptr)        # refused, naming it
            fname = schema["format"] if fmt is not None else None
            patterns = tuple(dict.fromkeys(
                ([schema["pattern"]] if "pattern" in schema else []) + list(more)))
            values = tuple(dict.fromkeys(out))
            excluded = tuple(dict.fromkeys((lang, value) for lang, value in nots))
            return self._shared_string(
                ("excluding", fname, patterns, values, excluded, lo, hi), ptr,
                lambda: strings.excluding_string(fname, patterns, values, excluded, lo, hi,
                                                 ptr, self.g))
        if out:
            return json_grammar.string_not_in(self.g, list(dict.fromkeys(out)))
        if fmt is not None:
            if "pattern" in schema:
                # the two languages' product (strings.format_pattern_string)
                return self._shared_string(
                    ("format-pattern", schema["format"], schema["pattern"], lo, hi), ptr,
                    lambda: strings.format_pattern_string(schema["format"], schema["pattern"],
                                                          lo, hi, ptr, self.g))
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
        unique = schema.get("uniqueItems", False)
        if not isinstance(unique, bool):
            ukw = self._kw(schema, "uniqueItems")
            raise CompileError("'uniqueItems' must be a boolean", keyword=ukw,
                               pointer=_ptr(ptr, ukw))
        if unique and (CONTAINS in schema or "contains" in schema or prefix) and \
                (hi is None or hi > 1):
            self._refuse_unique(schema, ptr, "without prefixItems, 'contains' or a 'not' of "
                                "'items'")
        if "contains" in schema:
            counted = self._array_with_contains(schema, ptr, items, rest, prefix, lo, hi)
            if counted is not None:
                return counted
        if CONTAINS in schema:
            return self._array_containing(schema, ptr, items, rest, prefix, lo, hi)
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
        if unique and (hi is None or hi > 1):
            # (arrays of at most one element are unique anyway)
            domain = self._finite_domain(items, _ptr(ptr, ikw))
            if domain is None:
                self._refuse_unique(schema, ptr, "when the items are finitely many values "
                                    "('enum', 'const', an 'anyOf' / 'oneOf' of those, "
                                    "'boolean', 'null', an integer range of at most "
                                    f"{_DOMAIN_RANGE})")
            return self._unique_array(schema, ptr, items, domain, lo, hi)
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


    def _refuse_unique(self, schema: dict, ptr: str, when: str) -> NoReturn:
        ukw = self._kw(schema, "uniqueItems")
        raise CompileError(f"keyword 'uniqueItems' is enforced only {when}", keyword=ukw,
                           pointer=_ptr(ptr, ukw))

    def _finite_domain(self, items: Any, ptr: str, depth: int = 0) -> Optional[List[Any]]:
        """Values an element satisfying items may take, distinct as JSON Schema compares them,
        when the schema bounds them to a few: its merged `const` or `enum`, the union of its
        `anyOf` / `oneOf` branches' (each bounded so), or its `type` (boolean and null, an
        integer range of at most _DOMAIN_RANGE values); None when nothing does. A superset:
        each value may still fail the rest of items (_unique_array checks each)."""
        if items is False:
            return []
        if items is True or depth > _DOMAIN_DEPTH:
            return None
        merged = self._merged(items, ptr, ("uniqueItems", ptr))
        if merged is False:
            return []
        values: Optional[list] = None
        if "const" in merged:
            values = [merged["const"]]
        elif "enum" in merged and isinstance(merged["enum"], list):
            values = merged["enum"]
        for kw in ("anyOf", "oneOf"):
            branches = merged.get(kw)
            if values is None and isinstance(branches, list) and branches:
                parts = [self._finite_domain(b, _ptr(ptr, kw, i), depth + 1)
                         for i, b in enumerate(branches)]
                if all(p is not None for p in parts):
                    values = [v for p in parts if p is not None for v in p]
        if values is None:
            values = _type_domain(merged)
        return None if values is None else _distinct(values)

    def _unique_array(self, schema: dict, ptr: str, items: Any, domain: List[Any], lo: int,
                      hi: Optional[int]) -> ir.Expr:
        """uniqueItems over a finite domain: each value that satisfies items as its literal
        rule (distinct values, so the rules share no document) at most once, in any order,
        lo..hi of them: an ir.AnyOrder node in brackets, one state per subset of the values
        written. Exact; past MAX_ORDER_STATES subsets it is refused, as soon as the values
        kept pass the bound (an enum of thousands is not checked value by value first)."""
        ikw = self._kw(schema, "items")
        iptr = _ptr(ptr, ikw)
        merged = self._merged(items, iptr, ("uniqueItems", ptr)) if domain else False
        types = _type_list(merged.get("type")) if isinstance(merged, dict) else None
        # written as _enum writes a typed integer's values: digits only
        integer = types not in (None, True) and "integer" in types and "number" not in types
        members = []
        for v in domain:
            # the value against items as jsonschema reads the original schemas; where a merge
            # rewrote them, the compiler's own conjunction (which may refuse)
            ok = self._valid_parts(v, items)
            if ok is None:
                e = self.compile(_all_of([items, Node({"const": v})], ("uniqueItems", ptr)),
                                 iptr)
            elif ok:
                e = json_grammar.value_literal(self.g, v, integer=integer)
            else:
                continue
            if not isinstance(e, ir.Nothing):
                members.append(self._object_part(iptr, "unique-item", e))
            if (1 << len(members)) > MAX_ORDER_STATES:
                ukw = self._kw(schema, "uniqueItems")
                raise LimitError(f"'uniqueItems' over more than {len(members) - 1} values "
                                 f"needs more than the limit of {MAX_ORDER_STATES} states",
                                 keyword=ukw, pointer=_ptr(ptr, ukw))
        n = len(members)
        hi = n if hi is None else min(hi, n)
        if hi < lo:
            return ir.NOTHING
        json_grammar.ws(self.g)     # (the root's whitespace rule: its bytes are the node's)
        node = ir.AnyOrder(tuple(members), (False,) * n, None, lo, hi, False,
                           json_grammar.ws_bytes(), b"[]")
        return ir.ref(self._object_part(ptr, "array", node, container=True,
                                        keyword="uniqueItems"))

    def _array_with_contains(self, schema: dict, ptr: str, items: Any, rest: ir.Expr,
                             prefix: list, lo: int, hi: Optional[int]) -> Optional[ir.Expr]:
        """`contains`, with 2019-09's `minContains` (default 1) and `maxContains`: an array
        whose elements all satisfy items, k..m of them also contains. None when contains
        imposes nothing (minContains 0 and no maxContains).

        At least k: `(I ,)* W ((, I)* , W){k-1} (, I)*`, W = items AND contains, I any
        element: a language, so which elements stand as the witnesses does not matter. At
        most m as well: the other elements must fail contains, N = items AND NOT contains,
        `(N ,)* W ((, N)* , W){k-1..m-1} (, N)*`, and when k is 0 also an array of N alone
        or none. Beside maxItems or a minItems above k, one witness counted among them
        (_one_witness), refused with other counts; refused beside prefixItems or a 'not' of
        'items' (a second witness), and maxContains where contains has no negation ('not')."""
        ckw = self._kw(schema, "contains")
        k = self._count(schema, "minContains", ptr)
        k = 1 if k is None else k
        m = self._count(schema, "maxContains", ptr)
        if k == 0 and m is None:
            return None
        bounded = hi is not None or lo > k
        beside = "a 'not' of 'items'" if CONTAINS in schema else "prefixItems" if prefix \
            else "minContains or maxContains beside maxItems or minItems" \
            if bounded and (k != 1 or m is not None) else None
        if beside is not None:
            raise CompileError(f"'contains' is enforced only without {beside} beside it",
                               keyword=ckw, pointer=_ptr(ptr, ckw))
        if m is not None and m < k:
            return ir.NOTHING
        self._check_unroll(k, "minContains", ptr)
        self._check_unroll(m, "maxContains", ptr)
        g = self.g
        sep = json_grammar.comma(g)
        witness = self.compile(_all_of([items, schema["contains"]], ("contains", ptr)),
                               _ptr(ptr, ckw))
        if isinstance(witness, ir.Nothing):
            # no element can satisfy contains: none does
            return ir.NOTHING if k > 0 else None
        if bounded:
            members = self._one_witness(rest, witness, lo, hi, ptr, ckw)
            if isinstance(members, ir.Nothing):
                return ir.NOTHING
            expr = json_grammar.container(g, "[", members, "]", nullable_members=False)
            return ir.ref(self._object_part(ptr, "array", expr, container=True, keyword=ckw))
        if m is None:
            other = rest
        else:
            mkw = self._kw(schema, "maxContains")
            try:
                other = self.compile(_all_of([items, Node({"not": schema["contains"]})],
                                             ("maxContains", ptr)), _ptr(ptr, mkw))
            except CompileError as e:
                raise CompileError(f"'maxContains' needs the elements that fail 'contains', "
                                   f"which cannot be written exactly: {e.reason}",
                                   keyword=mkw, pointer=_ptr(ptr, mkw)) from None
        before = ir.repeat(ir.seq(other, sep), 0, None)
        after = ir.repeat(ir.seq(sep, other), 0, None)
        between = ir.seq(after, sep, witness)
        first = max(k, 1)
        counted = ir.seq(before, witness,
                         ir.repeat(between, first - 1, None if m is None else m - 1), after)
        if k == 0:
            none = ir.seq(other, after)
            counted = none if m == 0 else ir.alt(none, counted)
        expr = json_grammar.container(g, "[", counted, "]", nullable_members=(k == 0))
        return ir.ref(self._object_part(ptr, "array", expr, container=True, keyword=ckw))

    def _one_witness(self, rest: ir.Expr, witness: ir.Expr, lo: int, hi: Optional[int],
                     ptr: str, keyword: str) -> ir.Expr:
        """The members of an array of lo..hi elements (I), one at least a witness (W, within
        I): by the place j of a witness, `(I ,){j} W (, I){lo-1-j..hi-1-j}`, and with no
        maxItems every place from lo-1 on as one, `(I ,){lo-1,} W (, I)*`. A place for each
        bound element: at most MAX_WITNESS_BOUND of them (LimitError naming keyword)."""
        bound = lo if hi is None else hi
        if bound > MAX_WITNESS_BOUND:
            raise LimitError(f"an array with an element that must satisfy '{keyword}' is "
                             f"counted up to {MAX_WITNESS_BOUND} elements (documented limit "
                             f"cengine.schema.vocabulary.MAX_WITNESS_BOUND); its minItems / "
                             f"maxItems need {bound}", keyword=keyword, pointer=ptr)
        sep = json_grammar.comma(self.g)
        if hi is not None and hi < max(lo, 1):
            return ir.NOTHING
        head = ir.seq(rest, sep)
        alts = []
        for j in range(bound if hi is not None else max(lo - 1, 0)):
            after_lo = max(lo - 1 - j, 0)
            alts.append(ir.seq(ir.repeat(head, j, j), witness,
                               ir.repeat(ir.seq(sep, rest), after_lo,
                                         None if hi is None else hi - 1 - j)))
        if hi is None:
            alts.append(ir.seq(ir.repeat(head, max(lo - 1, 0), None), witness,
                               ir.repeat(ir.seq(sep, rest), 0, None)))
        return ir.alt(*alts)

    def _array_containing(self, schema: dict, ptr: str, items: Any, rest: ir.Expr,
                          prefix: list, lo: int, hi: Optional[int]) -> ir.Expr:
        """An array whose elements satisfy items, one at least also schema[CONTAINS] (the
        negation of `items`): `(I ,)* J (, I)*` with J the witness, I any element, and beside
        minItems / maxItems as _one_witness counts them."""
        if prefix:
            raise CompileError("'not' of 'items' (an array with an element that fails it) is "
                               "enforced only without prefixItems", keyword="not", pointer=ptr)
        g = self.g
        witness = self.compile(_all_of([items, schema[CONTAINS]], ("not", ptr)),
                               _ptr(ptr, "items"))
        if isinstance(witness, ir.Nothing):
            return ir.NOTHING
        members = self._one_witness(rest, witness, lo, hi, ptr, "not")
        if isinstance(members, ir.Nothing):
            return ir.NOTHING
        expr = json_grammar.container(g, "[", members, "]", nullable_members=False)
        return ir.ref(self._object_part(ptr, "array", expr, container=True, keyword="items"))


# uniqueItems: an integer range is read as a finite domain up to this many values (each is
# compiled before the state bound, MAX_ORDER_STATES, is checked on the ones that remain), and
# anyOf / oneOf branches this deep
_DOMAIN_RANGE = 64
_DOMAIN_DEPTH = 8


def _type_domain(schema: dict) -> Optional[List[Any]]:
    """The values a node's `type` and bounds leave when they are finitely many (boolean, null,
    an integer range of at most _DOMAIN_RANGE values), else None."""
    names = _type_list(schema.get("type"))
    if names is None or names is True or not names or \
            not {"boolean", "null", "integer"}.issuperset(names):
        return None
    values: List[Any] = ([True, False] if "boolean" in names else []) + \
        ([None] if "null" in names else [])
    if "integer" in names:
        lo = hi = None
        for kw, exclusive in (("minimum", False), ("exclusiveMinimum", True)):
            v = schema.get(kw)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                b = math.floor(v) + 1 if exclusive else math.ceil(v)
                lo = b if lo is None else max(lo, b)
        for kw, exclusive in (("maximum", False), ("exclusiveMaximum", True)):
            v = schema.get(kw)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                b = math.ceil(v) - 1 if exclusive else math.floor(v)
                hi = b if hi is None else min(hi, b)
        if lo is None or hi is None or hi - lo + 1 > _DOMAIN_RANGE:
            return None
        values.extend(range(lo, hi + 1))
    return values


def _distinct(values: List[Any]) -> List[Any]:
    """values without repeats as JSON Schema compares them (1 == 1.0, true != 1), in order:
    scalars looked up by a key in a set (an enum of thousands compared every pair), the
    containers among themselves with _json_in."""
    out: List[Any] = []
    seen = set()
    containers: List[Any] = []
    for v in values:
        if isinstance(v, (list, dict)):
            if _json_in(v, containers):
                continue
            containers.append(v)
        else:
            # bool before int (True == 1 in Python); 1 and 1.0 share a key, as they should
            key = (type(v) if isinstance(v, (str, bool)) or v is None else "number", v)
            if key in seen:
                continue
            seen.add(key)
        out.append(v)
    return out


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
                 property_order: str = "declared", check_productive: bool = True) -> ir.GrammarIR:
    """The whole document: optional whitespace, one instance of schema, optional whitespace
    (without surrounding_whitespace: the instance alone, so generation ends with its root).

    check_productive=False leaves out the proof that the root derives a document (a grammar
    whose root derives none is then refused by the build instead): for a caller that builds
    the grammar at once and asks check_unproductive about a refusal (compile_json_schema),
    since the proof walks every rule of every compile and decides only the refusals."""
    g = ir.GrammarIR()
    w = json_grammar.ws(g) if surrounding_whitespace else None
    body = add_schema(g, schema, prefix="s-", closed_objects=closed_objects,
                      property_order=property_order)
    g.add("root", ir.seq(w, body, w) if w is not None else body)
    g.root = "root"
    g.whitespace_budget = whitespace_budget
    g.max_depth = max_depth
    if check_productive:
        check_unproductive(g)
    return g


def check_unproductive(g: ir.GrammarIR) -> None:
    """Refuse g, a grammar of schema_to_ir, when its root derives no finite document."""
    if "root" not in ir.productive_rules(g, json_grammar.productive_fixed_rules(g)):
        raise CompileError("the schema accepts no finite JSON document (false schema, an "
                           "impossible constraint, or a required endless recursion)", pointer="")
