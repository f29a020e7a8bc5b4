"""JSON Schema (draft 2020-12) -> grammar IR, enforcing every keyword it accepts exactly.

Enforced: type (all seven, unions), properties, required, additionalProperties, items,
prefixItems, minItems, maxItems, enum, const, minLength, maxLength, local $ref with
$defs/definitions (recursion becomes recursive rules), anyOf, boolean schemas, numeric
bounds and multipleOf (numbers.py), pattern (strings.py), format (formats.py: a
documented set enforced, every other format an annotation).
Every other keyword that changes which documents are valid raises CompileError naming the
keyword and its JSON pointer; annotations are ignored. Nothing is ever weakened: where the
grammar departs from the specification it only accepts fewer documents (closed objects,
property order, canonical spellings of keys and enum strings, integers without exponents),
all documented in docs/json-schema.md.

Shape: one rule per object/array (flagged `container`, so max_depth counts them), one rule
per $ref target (so recursion is a rule calling itself), shared lexical rules from
json_grammar (whitespace with the budget flag, one string body for all free strings).
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Set, Tuple
from urllib.parse import unquote

from .. import ir
from . import json_grammar as jg
from . import formats as jf
from . import numbers as jn
from . import strings as js
from ..errors import CompileError, LimitError

# minLength/maxLength/minItems/maxItems are unrolled into copies: same cap as GBNF repetition
MAX_UNROLL = 4096

TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")

# keywords that never change which documents are valid
ANNOTATIONS = frozenset({
    "title", "description", "examples", "default", "$comment", "$schema", "deprecated",
    "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "contentSchema",
    "$anchor", "$dynamicAnchor", "$vocabulary", "$defs", "definitions",
})

ENFORCED = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "prefixItems",
    "minItems", "maxItems", "enum", "const", "minLength", "maxLength", "$ref", "anyOf", "$id",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "pattern",
    "format",
})

# keywords that are refused, with the instance types they constrain (None: every type)
TYPE_SPECIFIC = {
    "uniqueItems": ("array",), "contains": ("array",), "unevaluatedItems": ("array",),
    "patternProperties": ("object",), "propertyNames": ("object",),
    "dependentRequired": ("object",), "dependentSchemas": ("object",),
    "minProperties": ("object",), "maxProperties": ("object",),
    "unevaluatedProperties": ("object",),
}

# keywords that only act together with a partner; alone they have no effect (spec)
NEEDS_PARTNER = {"then": "if", "else": "if", "minContains": "contains", "maxContains": "contains"}

# which keywords each instance type reads (anything else is irrelevant for that type)
_TYPE_KEYWORDS = {
    "string": ("minLength", "maxLength"),
    "array": ("prefixItems", "items", "minItems", "maxItems"),
    "object": ("properties", "required", "additionalProperties"),
}

# keywords whose meaning depends on each other: never split across an anyOf merge
_COUPLED = (frozenset({"properties", "additionalProperties"}), frozenset({"prefixItems", "items"}))


def _is_annotation(key: str) -> bool:
    # vendor extensions (OpenAPI `x-...`) are annotations by convention
    return key in ANNOTATIONS or key.startswith("x-")


def _type_list(t):
    """`type` as a list of known type names, True when absent, None when malformed."""
    if t is None:
        return True
    names = [t] if isinstance(t, str) else t
    if not isinstance(names, list) or not all(isinstance(n, str) and n in TYPES for n in names):
        return None
    return names


def _is_type(v, t: str) -> bool:
    """JSON Schema's type test (booleans are not numbers; 1.0 is an integer)."""
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if t == "integer":
        return isinstance(v, int) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float))
    return isinstance(v, {"string": str, "array": list, "object": dict}[t])


def _ptr(base: str, *tokens) -> str:
    return base + "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


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


def _is_bound(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool) and v >= 0) or \
        (isinstance(v, float) and v.is_integer() and v >= 0)


class _Compiler:
    def __init__(self, g: ir.GrammarIR, root: Any, prefix: str, closed_objects: bool):
        self.g = g
        self.root = root
        self.prefix = prefix
        self.closed = closed_objects
        self.ref_rules: Dict[str, str] = {}
        self.merged_rules: Dict[Tuple[str, str], str] = {}
        self._validator = None
        self.number_rules: Dict = {}
        self._has_refs = '"$ref"' in json.dumps(root) if isinstance(root, dict) else False

    # --- helpers ------------------------------------------------------------------------
    def _rule_name(self, ptr: str, kind: str) -> str:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", ptr).strip("-")
        return self.g.fresh_name(f"{self.prefix}{slug or 'root'}-{kind}")

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

    def _types(self, schema: dict, ptr: str) -> List[str]:
        if "type" not in schema:
            return ["object", "array", "string", "number", "boolean", "null"]
        t = schema["type"]
        ts = [t] if isinstance(t, str) else t
        if not isinstance(ts, list) or not ts or any(x not in TYPES for x in ts):
            raise CompileError(f"'type' must be one of {', '.join(TYPES)} or a list of them",
                               keyword="type", pointer=_ptr(ptr, "type"))
        out = [x for x in TYPES if x in ts]
        if "number" in out and "integer" in out:
            out.remove("integer")
        return out

    def _validating_keys(self, schema: dict) -> List[str]:
        return [k for k in schema if not _is_annotation(k) and k != "$id"]

    def _check_keywords(self, schema: dict, ptr: str, types: List[str]) -> None:
        """Refuse every keyword that would change validity and is not enforced here."""
        for k, v in schema.items():
            if _is_annotation(k) or k in ENFORCED:
                continue
            if k in NEEDS_PARTNER and NEEDS_PARTNER[k] not in schema:
                continue        # e.g. 'then' without 'if' is ignored by the spec
            if k == "if" and "then" not in schema and "else" not in schema:
                continue
            if k in TYPE_SPECIFIC and not set(TYPE_SPECIFIC[k]) & set(types):
                continue        # constrains a type this schema excludes anyway
            if _is_noop(k, v):
                continue
            raise CompileError(f"keyword '{k}' is not enforced", keyword=k, pointer=_ptr(ptr, k))

    # --- entry ---------------------------------------------------------------------------
    def compile(self, schema: Any, ptr: str) -> ir.Expr:
        if schema is True:
            return jg.value(self.g)
        if schema is False:
            return ir.NOTHING
        if not isinstance(schema, dict):
            raise CompileError("a schema must be an object or a boolean", pointer=ptr)
        if "$id" in schema and ptr != "" and self._has_refs:
            # an embedded resource changes what '#...' means below it: not followed here
            raise CompileError("'$id' inside a schema that uses '$ref' is not supported",
                               keyword="$id", pointer=_ptr(ptr, "$id"))
        if "enum" in schema or "const" in schema:
            return self._enum(schema, ptr)
        if "$ref" in schema:
            others = [k for k in self._validating_keys(schema) if k != "$ref"]
            if others:
                return self._merged(schema, "$ref", ptr)
            return self._ref(schema["$ref"], ptr)
        if "anyOf" in schema:
            return self._any_of(schema, ptr)
        types = self._types(schema, ptr)
        self._check_keywords(schema, ptr, types)
        if not self._validating_keys(schema):
            return jg.value(self.g)
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
                alts.append(jg.boolean(self.g))
            else:
                alts.append(jg.null(self.g))
        return ir.alt(*alts)

    # --- enum / const: a finite set, every sibling keyword enforced by filtering ------------
    def _enum(self, schema: dict, ptr: str) -> ir.Expr:
        for k in schema:
            if not _is_annotation(k) and k not in ENFORCED and k not in TYPE_SPECIFIC \
                    and k not in NEEDS_PARTNER and k not in ("if", "allOf", "oneOf", "not",
                                                             "format", "$dynamicRef"):
                raise CompileError(f"keyword '{k}' is not enforced", keyword=k, pointer=_ptr(ptr, k))
        if "const" in schema:
            values = [schema["const"]]
            kw = "const"
        else:
            values = schema["enum"]
            kw = "enum"
            if not isinstance(values, list):
                raise CompileError("'enum' must be an array", keyword="enum", pointer=_ptr(ptr, "enum"))
        if "format" in schema and isinstance(schema["format"], str) and \
                jf.format_expr(schema["format"]) is not None:
            # an enforced format filters exactly like the grammar would
            fmt = js.decoded_to_json(jf.format_expr(schema["format"]))
            values = [v for v in values if not isinstance(v, str) or _matches(fmt, v)]
        if all(_is_annotation(k) or k in ("enum", "const", "type") for k in schema) and \
                _type_list(schema.get("type")) is not None:
            # only `type` beside the values (the common case): no validator needed
            types = _type_list(schema.get("type"))
            kept = [v for v in values if types is True or any(_is_type(v, t) for t in types)]
        else:
            kept = [v for v in values if self._valid(v, schema, ptr, kw)]
        exprs = [jg.value_literal(self.g, v) for v in kept]
        expr = ir.alt(*exprs)
        if any(isinstance(v, (list, dict)) for v in kept):
            # literal containers count as one level of nesting
            return self.g.add(self._rule_name(ptr, kw), expr, container=True)
        return expr

    def _valid(self, value: Any, schema: dict, ptr: str, kw: str) -> bool:
        """value satisfies every keyword of schema (jsonschema, resolving refs from the root)."""
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError
        if self._validator is None:
            root = self.root if isinstance(self.root, (dict, bool)) else {}
            self._validator = Draft202012Validator(
                root, format_checker=Draft202012Validator.FORMAT_CHECKER)
        try:
            return next(self._validator.descend(value, schema), None) is None
        except (SchemaError, Exception) as e:  # unresolvable reference, malformed keyword
            raise CompileError(f"cannot evaluate '{kw}' against its sibling keywords: {e}",
                               keyword=kw, pointer=_ptr(ptr, kw)) from None

    # --- $ref ------------------------------------------------------------------------------
    def _resolve(self, ref: Any, ptr: str) -> Tuple[Any, str]:
        where = _ptr(ptr, "$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise CompileError(f"only local references ('#...') are enforced, not {ref!r}",
                               keyword="$ref", pointer=where)
        frag = unquote(ref[1:])
        if frag and not frag.startswith("/"):
            raise CompileError(f"anchor references ({ref!r}) are not supported",
                               keyword="$ref", pointer=where)
        node = self.root
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in frag.split("/")[1:]]
        for t in tokens:
            if isinstance(node, dict) and t in node:
                node = node[t]
            elif isinstance(node, list) and t.isdigit() and int(t) < len(node):
                node = node[int(t)]
            else:
                raise CompileError(f"reference {ref!r} points nowhere", keyword="$ref", pointer=where)
        return node, _ptr("", *tokens)

    def _ref(self, ref: Any, ptr: str) -> ir.Expr:
        target, tptr = self._resolve(ref, ptr)
        return self.rule_for(target, tptr)

    def rule_for(self, schema: Any, ptr: str) -> ir.Ref:
        """The rule of the schema at pointer ptr, made once; recursion refers back to it."""
        name = self.ref_rules.get(ptr)
        if name is None:
            name = self._rule_name(ptr, "schema")
            self.ref_rules[ptr] = name
            self.g.add(name, ir.NOTHING)
            self.g.rules[name].expr = self.compile(schema, ptr)
        return ir.Ref(name)

    # --- anyOf -----------------------------------------------------------------------------
    def _any_of(self, schema: dict, ptr: str) -> ir.Expr:
        branches = schema["anyOf"]
        if not isinstance(branches, list) or not branches:
            raise CompileError("'anyOf' must be a non-empty array", keyword="anyOf",
                               pointer=_ptr(ptr, "anyOf"))
        if [k for k in self._validating_keys(schema) if k != "anyOf"]:
            return self._merged(schema, "anyOf", ptr)
        return ir.alt(*(self.compile(b, _ptr(ptr, "anyOf", i)) for i, b in enumerate(branches)))

    def _merged(self, schema: dict, kw: str, ptr: str) -> ir.Expr:
        """Siblings AND (anyOf / $ref): distribute the siblings into each branch when the
        merged schema means exactly the conjunction; refuse otherwise."""
        rest = {k: v for k, v in schema.items() if k != kw and k not in ("$defs", "definitions")}
        if kw == "$ref":
            target, tptr = self._resolve(schema["$ref"], ptr)
            branches = [(target, tptr)]
        else:
            branches = [(b, _ptr(ptr, "anyOf", i)) for i, b in enumerate(schema["anyOf"])]
        merged = []
        for b, bptr in branches:
            m = self._merge(rest, b)
            if m is None:
                raise CompileError(f"'{kw}' beside other validating keywords is only enforced "
                                   "when the two merge into one schema", keyword=kw,
                                   pointer=_ptr(ptr, kw))
            merged.append(m)
        if kw == "$ref":
            # one rule per (target, siblings): a target that refers to itself through
            # another ref-with-siblings must end in a rule call, not an endless inlining
            key = (branches[0][1], json.dumps(rest, sort_keys=True))
            name = self.merged_rules.get(key)
            if name is None:
                name = self._rule_name(branches[0][1], "merged")
                self.merged_rules[key] = name
                self.g.add(name, ir.NOTHING)
                m = merged[0]
                self.g.rules[name].expr = self.compile(m, ptr) if m is not False else ir.NOTHING
            return ir.Ref(name)
        return ir.alt(*(self.compile(m, ptr) if m is not False else ir.NOTHING for m in merged))

    def _merge(self, a: dict, b: Any):
        """The schema meaning `a AND b`, or None when it cannot be written as one schema."""
        if b is True:
            return a
        if b is False:
            return False
        if not isinstance(b, dict) or any(k in b for k in ("$ref", "$id", "$defs", "definitions")):
            return None
        ka, kb = set(self._validating_keys(a)), set(self._validating_keys(b))
        for group in _COUPLED:
            if (ka & group) and (kb & group):
                return None
        # the closed-object default of one side must not close the other side's object
        if self.closed and (("properties" in ka) != ("properties" in kb)):
            other = kb if "properties" in ka else ka
            if "additionalProperties" in other:
                return None
        out = dict(a)
        for k, v in b.items():
            if k not in out or out[k] == v:
                out[k] = v
            elif k == "type":
                ta = {a[k]} if isinstance(a[k], str) else set(a[k])
                tb = {v} if isinstance(v, str) else set(v)
                both = (ta & tb) | ({"integer"} if ("integer" in ta and "number" in tb) or
                                    ("number" in ta and "integer" in tb) else set())
                if not both:
                    return False
                out[k] = [t for t in TYPES if t in both]
            elif k == "required" and isinstance(v, list) and isinstance(out[k], list):
                out[k] = list(dict.fromkeys(out[k] + v))
            elif k in ("minLength", "minItems") and _is_count(v) and _is_count(out[k]):
                out[k] = max(out[k], v)
            elif k in ("maxLength", "maxItems") and _is_count(v) and _is_count(out[k]):
                out[k] = min(out[k], v)
            elif k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum") \
                    and _is_bound(v) and _is_bound(out[k]):
                tighter = jn.tighter_bound(out[k], v, lower=k.endswith("inimum"))
                if tighter is None:
                    return None
                out[k] = tighter
            elif _is_annotation(k):
                continue
            else:
                return None
        return out

    # --- numbers ---------------------------------------------------------------------------
    def _number(self, schema: dict, ptr: str, integer: bool) -> ir.Expr:
        if not jn.has_numeric_keywords(schema):
            return jg.integer(self.g) if integer else jg.number(self.g)
        return jn.number_expr(self.g, schema, ptr, integer=integer,
                              name=self._rule_name(ptr, "integer" if integer else "number"),
                              cache=self.number_rules)

    # --- strings ---------------------------------------------------------------------------
    def _format(self, schema: dict, ptr: str) -> Optional[ir.Expr]:
        """The decoded language of an enforced format; None when absent or an annotation."""
        if "format" not in schema:
            return None
        name = schema["format"]
        if not isinstance(name, str):
            raise CompileError("'format' must be a string", keyword="format",
                               pointer=_ptr(ptr, "format"))
        if name in jf.UNENFORCEABLE:
            raise CompileError(f"format '{name}' is not enforced: {jf.UNENFORCEABLE[name]}",
                               keyword="format", pointer=_ptr(ptr, "format"))
        return jf.format_expr(name)

    def _string(self, schema: dict, ptr: str) -> ir.Expr:
        lo = self._count(schema, "minLength", ptr) or 0
        hi = self._count(schema, "maxLength", ptr)
        fmt = self._format(schema, ptr)
        if fmt is not None:
            if "pattern" in schema:
                raise CompileError("'pattern' beside an enforced 'format' is not enforced",
                                   keyword="pattern", pointer=_ptr(ptr, "pattern"))
            return js.constrained_string(fmt, lo, hi, ptr, "format")
        if "pattern" in schema:
            return js.constrained_string(js.pattern_expr(schema["pattern"], ptr), lo, hi, ptr,
                                         "pattern")
        self._check_unroll(lo, "minLength", ptr)
        self._check_unroll(hi, "maxLength", ptr)
        return jg.bounded_string(self.g, lo, hi)

    # --- arrays ----------------------------------------------------------------------------
    def _array(self, schema: dict, ptr: str) -> ir.Expr:
        g = self.g
        prefix = schema.get("prefixItems", [])
        if not isinstance(prefix, list):
            raise CompileError("'prefixItems' must be an array of schemas", keyword="prefixItems",
                               pointer=_ptr(ptr, "prefixItems"))
        items = schema.get("items", True)
        if not isinstance(items, (dict, bool)):
            raise CompileError("'items' must be a schema (array form is draft 2019 and older)",
                               keyword="items", pointer=_ptr(ptr, "items"))
        lo = self._count(schema, "minItems", ptr) or 0
        hi = self._count(schema, "maxItems", ptr)
        elems = [self.compile(p, _ptr(ptr, "prefixItems", i)) for i, p in enumerate(prefix)]
        rest = self.compile(items, _ptr(ptr, "items"))
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
        sep = jg.comma(g)

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
            return ir.repeat(ir.seq(sep, rest), max(lo - i, 0), n_hi)

        members = ir.NOTHING if hi == 0 else ir.seq(elem(0), tail(1))
        expr = jg.container(g, "[", members, "]", nullable_members=(lo == 0))
        return g.add(self._rule_name(ptr, "array"), expr, container=True)

    # --- objects ---------------------------------------------------------------------------
    def _object(self, schema: dict, ptr: str) -> ir.Expr:
        g = self.g
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise CompileError("'properties' must be an object", keyword="properties",
                               pointer=_ptr(ptr, "properties"))
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise CompileError("'required' must be an array of strings", keyword="required",
                               pointer=_ptr(ptr, "required"))
        required = list(dict.fromkeys(required))
        if "additionalProperties" in schema:
            addl, addl_ptr = schema["additionalProperties"], _ptr(ptr, "additionalProperties")
        elif "properties" in schema and self.closed:
            addl, addl_ptr = False, None     # documented departure: closed by default
        else:
            addl, addl_ptr = True, None
        addl_expr = self.compile(addl, addl_ptr or ptr) if addl is not True else jg.value(g)

        # (name, value expression, required) in document order
        entries: List[Tuple[str, ir.Expr, bool]] = []
        for name, sub in props.items():
            entries.append((name, self.compile(sub, _ptr(ptr, "properties", name)), name in required))
        for name in required:
            if name not in props:
                entries.append((name, addl_expr, True))
        present = []
        for name, e, req in entries:
            if isinstance(e, ir.Nothing):
                if req:
                    return ir.NOTHING        # a required property that cannot have a value
                continue
            present.append((name, e, req))
        col = jg.colon(g)
        sep = jg.comma(g)
        kvs = [ir.seq(ir.Bytes(jg.canonical_string(n)), col, e) for n, e, _ in present]
        extra = None
        if not isinstance(addl_expr, ir.Nothing):
            declared = list(props) + [r for r in required if r not in props]
            extra = ir.seq(jg.string_not_in(g, declared), col, addl_expr)
        n = len(present)
        first_req = next((i for i, (_, _, r) in enumerate(present) if r), None)
        starts = list(range(n if first_req is None else first_req + 1))
        inline = len(starts) * max(n, 1) <= 64

        after_cache: Dict[int, ir.Expr] = {}

        def after(i: int) -> ir.Expr:
            # properties i.. (and extra keys) once something has been written
            if i in after_cache:
                return after_cache[i]
            if i == n:
                e = ir.repeat(ir.seq(sep, extra), 0, None) if extra is not None else ir.EMPTY
            else:
                item = ir.seq(sep, kvs[i])
                e = _seq_onto(item if present[i][2] else ir.opt(item), after(i + 1))
            if not inline and i < n:
                e = g.add(self._rule_name(ptr, f"after{i}"), e)
            after_cache[i] = e
            return e

        firsts = [_seq_onto(kvs[j], after(j + 1)) for j in starts]
        if first_req is None and extra is not None:
            firsts.append(_seq_onto(extra, after(n)))
        members = jg.alt(*firsts)
        expr = jg.container(g, "{", members, "}", nullable_members=(first_req is None))
        return g.add(self._rule_name(ptr, "object"), expr, container=True)


def _matches(expr: ir.Expr, s: str) -> bool:
    """The JSON spelling of s (no quotes) is in expr (a small byte-level check for enum
    values under an enforced format)."""
    from ..grammar import Grammar
    g = ir.GrammarIR()
    g.add("root", expr)
    m = Grammar.from_ir(g).matcher()
    body = jg.canonical_string(s)[1:-1]
    return m.accept_bytes(body) and m.is_accepting()


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


def _productive(g: ir.GrammarIR) -> Set[str]:
    """Rules that match at least one finite string (least fixpoint)."""
    done: Set[str] = set()

    def prod(e) -> bool:
        if isinstance(e, ir.Bytes) or isinstance(e, (ir.ByteSet, ir.CharSet, ir.Dfa)):
            return True
        if isinstance(e, ir.Seq):
            return all(prod(x) for x in e.items)
        if isinstance(e, ir.Alt):
            return any(prod(x) for x in e.items)
        if isinstance(e, ir.Repeat):
            return e.lo == 0 or prod(e.item)
        if isinstance(e, ir.Ref):
            return e.name in done
        return False

    changed = True
    while changed:
        changed = False
        for name, rule in g.rules.items():
            if name not in done and prod(rule.expr):
                done.add(name)
                changed = True
    return done


def add_schema(g: ir.GrammarIR, schema: Any, *, prefix: str, closed_objects: bool = True) -> ir.Expr:
    """Add the rules of `schema` to g (names start with prefix) and return the expression
    matching one instance. `True` / `{}` is any JSON value; local $refs resolve against schema."""
    c = _Compiler(g, schema, prefix, closed_objects)
    if isinstance(schema, bool):
        return c.compile(schema, "")
    return c.rule_for(schema, "")


def schema_to_ir(schema: Any, *, closed_objects: bool = True, whitespace_budget: Optional[int] = 64,
                 max_depth: int = 64) -> ir.GrammarIR:
    """The whole document: optional whitespace, one instance of schema, optional whitespace."""
    g = ir.GrammarIR()
    w = jg.ws(g)
    body = add_schema(g, schema, prefix="s-", closed_objects=closed_objects)
    g.add("root", ir.seq(w, body, w))
    g.root = "root"
    g.whitespace_budget = whitespace_budget
    g.max_depth = max_depth
    if "root" not in _productive(g):
        raise CompileError("the schema accepts no finite JSON document (false schema, an "
                           "impossible constraint, or a required endless recursion)", pointer="")
    return g
