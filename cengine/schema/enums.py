"""enum and const: a finite set of values, every sibling keyword enforced by filtering the
values (each value checked against the original schemas the node stands for, by jsonschema
for the document's draft), then the values' literals (many strings: one automaton of their
spellings). The same validator answers the other parts' questions about single values
(oneOf's discriminators, propertyNames against declared names): _valid_parts."""
from __future__ import annotations

import functools
from typing import Any, List, Optional

from .. import ir
from . import drafts
from . import formats
from . import json_grammar
from . import strings
from .conjunction import _parts_of
from .drafts import Node
from .drafts import pointer as _ptr
from .vocabulary import (ABSENT, CONTAINS, EXCLUDE, FRACTION, NOT_LANGUAGES, PATTERNS,
                         _is_annotation, _is_type, _json_in, _type_list, _values_of)
from ..errors import CompileError
from .parts import CompilerPart


# the keywords of an original schema that Enums._lengths_only reads without a validator
_LENGTH_ENUM_KEYS = ("enum", "type", "minLength", "maxLength")
# keywords that name a schema resource: nothing a value is checked against
_IDENTIFIERS = ("$id", "id")


def _matches(expr: ir.Expr, s: str) -> bool:
    """The JSON spelling of s (no quotes) is in expr (a small byte-level check for enum
    values under an enforced format)."""
    from ..grammar import Grammar
    g = ir.GrammarIR()
    g.add("root", expr)
    m = Grammar.from_ir(g).matcher()
    body = json_grammar.canonical_string(s)[1:-1]
    return m.accept_bytes(body) and m.is_accepting()


# keywords a rewritten node (and the schemas inside it) may hold for _rewritten_valid: their
# meaning is the same in every draft (draft-04 lacks const and propertyNames), and the
# compiler's internal keywords, which _rewritten_validator_class reads
_SAME_IN_EVERY_DRAFT = frozenset({
    "type", "enum", "anyOf", "allOf", "oneOf", "not", "minLength", "maxLength", "pattern",
    "format", "minimum", "maximum", "multipleOf", "required", "properties",
    "additionalProperties", "patternProperties", "minItems", "maxItems", "minProperties",
    "maxProperties", "uniqueItems"})
_INTERNAL = frozenset({ABSENT, EXCLUDE, CONTAINS, FRACTION, NOT_LANGUAGES, PATTERNS})
# the keywords whose values are schemas (or lists / maps of them) among those
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
_SUBSCHEMA_MAPS = ("properties", "patternProperties")
_SUBSCHEMAS = ("not", "additionalProperties", "propertyNames", CONTAINS)


def _evaluable(schema: Any, draft: str) -> bool:
    """schema and every schema inside it hold only keywords _rewritten_valid reads alike in
    draft and in 2020-12 (annotations aside)."""
    allowed = _SAME_IN_EVERY_DRAFT | _INTERNAL | \
        (frozenset() if draft == drafts.DRAFT4 else frozenset({"const", "propertyNames"}))
    stack = [schema]
    while stack:
        x = stack.pop()
        if isinstance(x, bool):
            continue
        if not isinstance(x, dict):
            return False
        for k, v in x.items():
            if k not in allowed and not _is_annotation(k):
                return False
            if k in _SUBSCHEMA_LISTS:
                if not isinstance(v, list):
                    return False
                stack.extend(v)
            elif k in _SUBSCHEMA_MAPS:
                if not isinstance(v, dict):
                    return False
                stack.extend(v.values())
            elif k in _SUBSCHEMAS:
                stack.append(v)
    return True


@functools.lru_cache(maxsize=None)
def _rewritten_validator_class(draft: str, base: Any) -> Any:
    """base (the draft's jsonschema validator) reading the internal keywords too."""
    import jsonschema
    from jsonschema.exceptions import ValidationError

    def exclude(validator, values, instance, schema):
        if _json_in(instance, values):
            yield ValidationError(f"{instance!r} is excluded")

    def absent(validator, names, instance, schema):
        if validator.is_type(instance, "object") and any(n in instance for n in names):
            yield ValidationError("a name that must be absent is present")

    def contains(validator, sub, instance, schema):
        if validator.is_type(instance, "array") and \
                not any(validator.evolve(schema=sub).is_valid(e) for e in instance):
            yield ValidationError("no element satisfies the negated items")

    def fraction(validator, flag, instance, schema):
        if flag and validator.is_type(instance, "number") and \
                (isinstance(instance, int) or float(instance).is_integer()):
            yield ValidationError("an integer where a fraction must be")

    def not_languages(validator, languages, instance, schema):
        if validator.is_type(instance, "string") and \
                any(strings.in_language(kind, value, instance) for kind, value in languages):
            yield ValidationError("a string in an excluded language")

    def patterns(validator, regexes, instance, schema):
        if validator.is_type(instance, "string") and \
                not all(strings.in_language("pattern", p, instance) for p in regexes):
            yield ValidationError("a string without a match of a pattern")

    return jsonschema.validators.extend(base, {
        EXCLUDE: exclude, ABSENT: absent, CONTAINS: contains, FRACTION: fraction,
        NOT_LANGUAGES: not_languages, PATTERNS: patterns})


class Enums(CompilerPart):
    """The enum / const part of the schema compiler and its validator (a mixin of
    compiler._Compiler: reads its g, root, draft and _validator, and calls its _rule_name)."""

    def _enum(self, schema: dict, ptr: str) -> ir.Expr:
        if "enum" in schema and not isinstance(schema["enum"], list):
            raise CompileError("'enum' must be an array", keyword="enum", pointer=_ptr(ptr, "enum"))
        kw = "const" if "const" in schema else "enum"
        values = _values_of(schema)     # both keywords: the values in both
        if "format" in schema and isinstance(schema["format"], str) and \
                formats.format_expr(schema["format"]) is not None:
            # an enforced format filters exactly like the grammar would
            fmt = strings.format_body(schema["format"])
            values = [v for v in values if not isinstance(v, str) or _matches(fmt, v)]
        if EXCLUDE in schema:
            values = [v for v in values if not _json_in(v, schema[EXCLUDE])]
        rest = [k for k in schema if not _is_annotation(k) and k not in ("enum", "const", "type",
                                                                           "$id", EXCLUDE)]
        if not rest and _type_list(schema.get("type")) is not None:
            # only `type` beside the values (the common case): no validator needed
            types = _type_list(schema.get("type"))
            kept = [v for v in values if types is True or any(_is_type(v, t) for t in types)]
        elif self._lengths_only(schema, rest, values, self.draft):
            # string lengths beside them too (an enum of codes with maxLength): jsonschema's
            # reading of those (len of a str, others pass) without validating every value
            # against the whole part, whose enum keyword compares it with every value
            types = _type_list(schema.get("type"))
            lo = schema.get("minLength", 0)
            hi = schema.get("maxLength")
            kept = [v for v in values if (types is True or any(_is_type(v, t) for t in types))
                    and (not isinstance(v, str) or (lo <= len(v) and (hi is None or len(v) <= hi)))]
        else:
            parts = self._value_parts(schema)
            kept = [v for v in values if self._valid(v, schema, ptr, kw, parts)]
        t = _type_list(schema.get("type"))
        # typed integer: integral values are written as integers (no `1.0`)
        integer = t not in (None, True) and "integer" in t and "number" not in t
        texts = [v for v in kept if isinstance(v, str)]
        if len(texts) >= json_grammar.STRING_SET_DFA_MIN:
            # many strings: one automaton of their spellings (linear to make and to build),
            # then the other values' literals (in the values' order as before)
            expr = ir.alt(json_grammar.string_set(texts),
                          *(json_grammar.value_literal(self.g, v, integer=integer)
                            for v in kept if not isinstance(v, str)))
        else:
            expr = ir.alt(*(json_grammar.value_literal(self.g, v, integer=integer) for v in kept))
        if any(isinstance(v, (list, dict)) for v in kept):
            # literal containers count as one level of nesting
            return self.g.add(self._rule_name(ptr, kw), expr, container=True)
        return expr

    @staticmethod
    def _lengths_only(schema: dict, rest: List[str], values: list, draft: str) -> bool:
        """_valid of each of `values` (from schema's enum) is type, minLength and maxLength
        alone, read as jsonschema reads them: schema stands for one original schema that
        holds nothing else that validates (the same enum object and the same bounds; beside
        them annotations, the identifier `$id` / draft 4's `id` and keywords `draft` does not
        define, which no validator of the draft reads), the bounds are counts, and no value
        is a float (draft 4 types 1.0 apart from the integers, the later drafts not)."""
        if not rest or "const" in schema or EXCLUDE in schema or \
                not all(k == "minLength" or k == "maxLength" for k in rest):
            return False
        if _type_list(schema.get("type")) is None or any(type(v) is float for v in values):
            return False
        if not all(type(schema[k]) is int and schema[k] >= 0 for k in rest):
            return False
        if not isinstance(schema, Node):
            return True
        if schema.parts is None or len(schema.parts) != 1:
            return False
        part = schema.parts[0]
        defined = drafts.KEYWORDS[draft]
        return isinstance(part, dict) and part.get("enum") is schema["enum"] and \
            all(k in _LENGTH_ENUM_KEYS or _is_annotation(k) or k in _IDENTIFIERS or
                k not in defined for k in part) and \
            all(part.get(k) == schema.get(k) for k in _LENGTH_ENUM_KEYS)

    def _validator_class(self):
        import jsonschema
        return {drafts.DRAFT4: jsonschema.Draft4Validator,
                drafts.DRAFT6: jsonschema.Draft6Validator,
                drafts.DRAFT7: jsonschema.Draft7Validator,
                drafts.DRAFT2019: jsonschema.Draft201909Validator,
                drafts.DRAFT2020: jsonschema.Draft202012Validator}[self.draft]

    def _spec_valid(self, value: Any, schema: Any) -> bool:
        """value satisfies schema, an original schema of this document (jsonschema for the
        document's draft, refs resolved from the root, formats asserted)."""
        if schema is True:
            return True
        if schema is False:
            return False
        if self._validator is None:
            cls = self._validator_class()
            root = self.root if isinstance(self.root, (dict, bool)) else {}
            self._validator = cls(root, format_checker=cls.FORMAT_CHECKER)
        return next(self._validator.descend(value, schema), None) is None

    @staticmethod
    def _value_parts(schema: dict) -> Optional[list]:
        """The original schemas behind schema for validating its own enum values: a part
        whose `enum` is the very list the values come from is taken without it (each value
        is in it; validating it compared every value with every other one, quadratic in a
        long enum beside other keywords)."""
        parts = schema.parts if isinstance(schema, Node) else [schema]
        if parts is None or "const" in schema or "enum" not in schema:
            return parts
        own = schema["enum"]
        return [{k: v for k, v in p.items() if k != "enum"}
                if isinstance(p, dict) and p.get("enum") is own else p for p in parts]

    def _valid(self, value: Any, schema: dict, ptr: str, kw: str,
               parts: Optional[list] = None) -> bool:
        """value satisfies every keyword of schema (the original schemas it stands for;
        `parts`: _value_parts of schema, for its own enum values)."""
        if parts is None:
            parts = schema.parts if isinstance(schema, Node) else [schema]
        if parts is None:
            return self._rewritten_valid(value, schema, ptr, kw)
        try:
            ok = all(self._spec_valid(value, p) for p in parts)
        except Exception as e:  # unresolvable reference, malformed keyword
            raise CompileError(f"cannot evaluate '{kw}' against its sibling keywords: {e}",
                               keyword=kw, pointer=_ptr(ptr, kw)) from None
        return ok and not _json_in(value, schema.get(EXCLUDE, [])) and \
            all(not isinstance(value, dict) or n not in value for n in schema.get(ABSENT, []))

    def _rewritten_valid(self, value: Any, schema: dict, ptr: str, kw: str) -> bool:
        """value satisfies schema, a node a merge rewrote (no original schemas behind it),
        read by the document draft's validator extended with the compiler's internal
        keywords; refused where the node (or a schema inside it) has a keyword whose meaning
        could differ between its draft and the 2020-12 reading of rewritten nodes, or a
        reference."""
        if not _evaluable(schema, self.draft):
            raise CompileError(f"'{kw}' beside keywords that a merge rewrote is not enforced",
                               keyword=kw, pointer=_ptr(ptr, kw))
        cls = _rewritten_validator_class(self.draft, self._validator_class())
        return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)

    def _valid_parts(self, value: Any, schema: Any) -> Optional[bool]:
        """value satisfies schema (an original or a rewritten node, read through the
        originals it stands for); None when that cannot be told."""
        parts = _parts_of(schema)
        if parts is None:
            return None
        try:
            return all(self._spec_valid(value, p) for p in parts)
        except Exception:
            return None
