"""References: local `$ref` (JSON pointers into the document, `$defs` / `definitions` as any
other place, and plain-name fragments: the root resource's anchors) resolved to the schema
they point at, one rule per target (so recursion is a rule that calls itself), and the
document's embedded resources (`$id` below the root), which change what '#...' means and are
refused where a reference would cross them."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

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


# keywords whose values are instance data, not schemas: no anchor is declared inside them
_DATA_KEYWORDS = frozenset(("enum", "const", "default", "examples"))


def _resource_id(node: dict, draft: str) -> Optional[str]:
    """The non-fragment id by which node starts a resource of its own, or None (the legacy
    drafts ignore an id beside `$ref`, as they ignore every sibling of it)."""
    legacy = draft in (drafts.DRAFT4, drafts.DRAFT6, drafts.DRAFT7)
    v = node.get("id" if draft == drafts.DRAFT4 else "$id")
    if not isinstance(v, str) or v.startswith("#") or (legacy and "$ref" in node):
        return None
    return v


def _declared_anchors(node: dict, draft: str) -> List[Tuple[str, str]]:
    """(keyword, name) of each plain-name anchor node declares: `id: "#name"` in draft-04,
    `$id: "#name"` in drafts 06 and 07, `$anchor` from 2019-09 and `$dynamicAnchor` in
    2020-12 (which is also a plain anchor for a static `$ref`)."""
    if draft in (drafts.DRAFT4, drafts.DRAFT6, drafts.DRAFT7):
        key = "id" if draft == drafts.DRAFT4 else "$id"
        v = node.get(key)
        return [(key, v[1:])] if isinstance(v, str) and v.startswith("#") and v != "#" else []
    keys = ("$anchor", "$dynamicAnchor") if draft == drafts.DRAFT2020 else ("$anchor",)
    return [(k, node[k]) for k in keys if isinstance(node.get(k), str)]


def find_anchors(root: Any, draft: str) -> Dict[str, List[Tuple[Any, str, str]]]:
    """name -> [(schema, its pointer, the declaring keyword's pointer)] for every plain-name
    anchor of the root resource: the walk does not enter an embedded resource (a non-fragment
    id below the root), whose anchors are its own, nor instance data (`enum`, `const`,
    `default`, `examples`). A name declared twice has two entries."""
    found: Dict[str, List[Tuple[Any, str, str]]] = {}
    stack: List[Tuple[Any, str]] = [(root, "")]
    while stack:
        x, ptr = stack.pop()
        if isinstance(x, dict):
            if ptr and _resource_id(x, draft) is not None:
                continue
            for key, name in _declared_anchors(x, draft):
                found.setdefault(name, []).append((x, ptr, _ptr(ptr, key)))
            stack.extend((v, _ptr(ptr, k)) for k, v in x.items() if k not in _DATA_KEYWORDS)
        elif isinstance(x, list):
            stack.extend((v, _ptr(ptr, i)) for i, v in enumerate(x))
    return found


class References(CompilerPart):
    """The $ref part of the schema compiler (a mixin of compiler._Compiler: reads its
    root, draft, g, ref_rules, _embedded and _anchors, and calls its compile and
    _rule_name)."""

    def _resolve(self, ref: Any, ptr: str, keyword: str = "$ref") -> Tuple[Any, str]:
        """(the schema `ref` points at, its pointer); keyword: the reference's keyword as
        written ($recursiveRef and $dynamicRef become $ref), which an error names."""
        where = _ptr(ptr, keyword)
        if isinstance(ref, str) and not ref.startswith("#"):
            ref = self._own_uri_ref(ref)
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise CompileError(f"only local references ('#...') are enforced, not {ref!r}",
                               keyword=keyword, pointer=where)
        frag = unquote(ref[1:])
        if frag and not frag.startswith("/"):
            return self._anchor(ref, frag, keyword, where)
        node = self.root
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in frag.split("/")[1:]]
        for t in tokens:
            if isinstance(node, dict) and t in node:
                node = node[t]
            elif isinstance(node, list) and t.isdigit() and int(t) < len(node):
                node = node[int(t)]
            else:
                raise CompileError(f"reference {ref!r} points nowhere", keyword=keyword,
                                   pointer=where)
        return node, _ptr("", *tokens)

    def _own_uri_ref(self, ref: str) -> str:
        """ref as a fragment ('#...') when it is an absolute URI of the root resource itself
        (the root's `$id` followed by a fragment, or by none), else ref unchanged. An absolute
        URI names the same resource from wherever it is written."""
        root = self.root
        key = "id" if self.draft == drafts.DRAFT4 else "$id"
        own = root.get(key) if isinstance(root, dict) else None
        if not isinstance(own, str) or not urlsplit(ref).scheme:
            return ref
        uri, _, frag = ref.partition("#")
        return "#" + frag if uri and uri == own.partition("#")[0] else ref

    def _anchor(self, ref: str, name: str, keyword: str, where: str) -> Tuple[Any, str]:
        """The schema of the root resource that declares the plain-name anchor `name`."""
        if self._anchors is None:
            self._anchors = find_anchors(self.root, self.draft)
        found = self._anchors.get(name, ())
        if len(found) != 1:
            if found:
                first, second = sorted(at for _, _, at in found)[:2]
                raise CompileError(f"reference {ref!r} is ambiguous: anchor {name!r} is "
                                   f"declared at {first!r} and at {second!r}",
                                   keyword=keyword, pointer=where)
            declared = "$anchor" if self.draft in (drafts.DRAFT2019, drafts.DRAFT2020) \
                else ("id" if self.draft == drafts.DRAFT4 else "$id") + ": \"#...\""
            raise CompileError(f"reference {ref!r} points nowhere: no schema of the document's "
                               f"root resource declares the anchor {name!r} (with {declared}, "
                               f"as its draft, {self.draft}, spells it)", keyword=keyword,
                               pointer=where)
        target, tptr, _ = found[0]
        return target, tptr

    def _ref(self, ref: Any, ptr: str, keyword: str = "$ref") -> ir.Expr:
        target, tptr = self._resolve(ref, ptr, keyword)
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
        stack = [(self.root, True)]
        while stack:
            x, top = stack.pop()
            if isinstance(x, dict):
                if not top and _resource_id(x, self.draft) is not None:
                    return True
                stack.extend((y, False) for k, y in x.items() if k not in _DATA_KEYWORDS)
            elif isinstance(x, list):
                stack.extend((y, False) for y in x)
        return False

    def _uses_ref(self, schema: Any) -> bool:
        text = json.dumps(schema)
        return '"$ref"' in text or '"$recursiveRef"' in text or '"$dynamicRef"' in text
