"""References: local `$ref` (JSON pointers into the document, `$defs` / `definitions` as any
other place) resolved to the schema they point at, one rule per target (so recursion is a
rule that calls itself), and the document's embedded resources (`$id` below the root), which
change what '#...' means and are refused where a reference would cross them."""
from __future__ import annotations

import json
from typing import Any, Optional, Tuple
from urllib.parse import unquote

from .. import ir
from . import drafts
from .drafts import pointer as _ptr
from ..errors import CompileError
from .parts import CompilerPart


def _sizing_keyword(schema: Any) -> Optional[str]:
    """The keyword of a schema that a limit met while building its rule names: the first
    present of those whose compiled form can grow large."""
    if isinstance(schema, dict):
        for k in ("pattern", "format", "enum", "maxLength", "minLength", "maxItems",
                  "minItems", "properties", "items", "anyOf", "oneOf", "allOf", "$ref"):
            if k in schema:
                return k
    return None


class References(CompilerPart):
    """The $ref part of the schema compiler (a mixin of compiler._Compiler: reads its
    root, draft, g, ref_rules and _embedded, and calls its compile and _rule_name)."""

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
                raise CompileError(f"reference {ref!r} points nowhere", keyword="$ref",
                                   pointer=where)
        return node, _ptr("", *tokens)

    def _ref(self, ref: Any, ptr: str) -> ir.Expr:
        target, tptr = self._resolve(ref, ptr)
        return self.rule_for(target, tptr)

    def rule_for(self, schema: Any, ptr: str) -> ir.Ref:
        """The rule of the schema at pointer ptr, made once; recursion refers back to it."""
        name = self.ref_rules.get(ptr)
        if name is None:
            name = self._rule_name(ptr, "schema", _sizing_keyword(schema))
            self.ref_rules[ptr] = name
            self.g.add(name, ir.NOTHING)
            self.g.rules[name].expr = self.compile(schema, ptr)
        return ir.ref(name)

    def _embedded_ids(self) -> bool:
        """Some schema below the root has a non-fragment $id (id in draft-04)."""
        if self._embedded is None:
            self._embedded = self._find_embedded_ids()
        return self._embedded

    def _find_embedded_ids(self) -> bool:
        key = "id" if self.draft == drafts.DRAFT4 else "$id"
        stack = [(self.root, True)]
        while stack:
            x, top = stack.pop()
            if isinstance(x, dict):
                v = x.get(key)
                if not top and isinstance(v, str) and not v.startswith("#"):
                    return True
                stack.extend((y, False) for k, y in x.items() if k not in ("enum", "const"))
            elif isinstance(x, list):
                stack.extend((y, False) for y in x)
        return False

    def _uses_ref(self, schema: Any) -> bool:
        text = json.dumps(schema)
        return '"$ref"' in text or '"$recursiveRef"' in text
