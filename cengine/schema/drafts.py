"""JSON Schema drafts: which keywords each draft defines, and one schema node of any draft
rewritten in draft 2020-12 vocabulary, so the compiler reads a single dialect.

The draft is the root's `$schema` (draft-04, -06, -07, 2019-09, 2020-12, with or without the
trailing `#`, http or https); absent or unknown, 2020-12. A keyword the draft does not define
is an annotation (the specification: unknown keywords have no effect on validity), so it is
dropped from the node and recorded as an `IgnoredKeyword`, which callers can show. Keywords
that are annotations in every draft (`title`, `description`, ...) are not recorded.

The rewriting (`normalize`) is per node and exact:
* draft-04 `id` is `$id`; draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum` turn the
  matching `minimum`/`maximum` into the numeric keyword of later drafts;
* drafts 04..07: a node with `$ref` is that reference alone (its siblings are ignored, the
  drafts say so) and those siblings are recorded as ignored;
* drafts 04..2019-09: array-form `items` is `prefixItems`, and `additionalItems` beside it
  is `items`; beside a schema-form `items`, `additionalItems` has no effect;
* drafts 04..07: `dependencies` splits into `dependentRequired` (array values) and
  `dependentSchemas` (schema values).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

DRAFT4, DRAFT6, DRAFT7 = "draft-04", "draft-06", "draft-07"
DRAFT2019, DRAFT2020 = "2019-09", "2020-12"
DRAFTS = (DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020)

_URIS = {
    "json-schema.org/draft-04/schema": DRAFT4,
    "json-schema.org/draft-06/schema": DRAFT6,
    "json-schema.org/draft-07/schema": DRAFT7,
    "json-schema.org/draft/2019-09/schema": DRAFT2019,
    "json-schema.org/draft/2020-12/schema": DRAFT2020,
}

# annotations (and schema containers) in every draft: never recorded as ignored
ALWAYS_ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$comment", "$schema", "deprecated",
    "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "contentSchema",
    "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$defs", "definitions",
})

_D4 = frozenset({
    "$schema", "id", "$ref", "definitions", "title", "description", "default", "format",
    "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "additionalItems", "items", "maxItems", "minItems", "uniqueItems",
    "maxProperties", "minProperties", "required", "additionalProperties", "properties",
    "patternProperties", "dependencies", "enum", "type", "allOf", "anyOf", "oneOf", "not",
})
_D6 = (_D4 - {"id"}) | {"$id", "const", "contains", "propertyNames", "examples"}
_D7 = _D6 | {"$comment", "if", "then", "else", "readOnly", "writeOnly", "contentMediaType",
             "contentEncoding"}
_D2019 = (_D7 - {"dependencies", "definitions"}) | {
    "$anchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary", "$defs", "dependentRequired",
    "dependentSchemas", "unevaluatedItems", "unevaluatedProperties", "maxContains",
    "minContains", "deprecated", "contentSchema"}
_D2020 = (_D2019 - {"$recursiveRef", "$recursiveAnchor", "additionalItems"}) | {
    "$dynamicRef", "$dynamicAnchor", "prefixItems"}

# the keywords each draft defines (core, applicator, validation, meta-data, format, content)
KEYWORDS: Dict[str, frozenset] = {DRAFT4: _D4, DRAFT6: _D6, DRAFT7: _D7, DRAFT2019: _D2019,
                                  DRAFT2020: _D2020}


@dataclass(frozen=True)
class IgnoredKeyword:
    """A keyword that has no effect on validity in the schema's draft (why: "unknown" for a
    keyword the draft does not define, "beside $ref" for a sibling drafts 04..07 ignore)."""
    keyword: str
    pointer: str
    why: str = "unknown"


def draft_of(root: Any) -> str:
    """The draft named by the root's `$schema`; 2020-12 when absent or not a known draft."""
    uri = root.get("$schema") if isinstance(root, dict) else None
    if not isinstance(uri, str):
        return DRAFT2020
    u = uri.strip().rstrip("#")
    for scheme in ("https://", "http://"):
        if u.startswith(scheme):
            u = u[len(scheme):]
    return _URIS.get(u, DRAFT2020)


class Node(dict):
    """A schema node in 2020-12 vocabulary. `src` maps a rewritten keyword to the keyword it
    came from (for error pointers); `parts` lists the original schemas whose conjunction the
    node means (None when unknown), for checking enum values against them; `origin` is the
    (keyword, pointer) an error about a node the compiler made names (None: its own)."""
    __slots__ = ("src", "parts", "origin")

    def __init__(self, *args, src: Optional[Dict[str, str]] = None, parts=None, origin=None, **kw):
        super().__init__(*args, **kw)
        self.src = src or {}
        self.parts = parts
        self.origin = origin


_new_dict = dict.__new__
_fill = dict.update


def _copy_node(node: dict) -> Node:
    """Node(node, parts=[node]): the copy normalize makes of most nodes, without
    Node.__init__'s argument handling (a compile copies every schema node it reads)."""
    out = _new_dict(Node)
    _fill(out, node)
    out.src = {}
    out.parts = [node]
    out.origin = None
    return out


def pointer(base: str, *tokens) -> str:
    """The JSON pointer of `tokens` below `base` (RFC 6901 escapes). The schema compiler's
    modules all build their error and annotation pointers with it."""
    # called for every keyword and property read: the escapes only where a token needs them
    for t in tokens:
        if type(t) is not str:
            t = str(t)
        if "~" in t or "/" in t:
            t = t.replace("~", "~0").replace("/", "~1")
        base = base + "/" + t
    return base


# per draft, the keywords normalize keeps as they are (defined or always annotations, and not
# rewritten; `items` too when it is a schema, below): a node of only these is copied whole,
# which most nodes of real schemas are
_KEPT: Dict[str, frozenset] = {
    d: (KEYWORDS[d] | ALWAYS_ANNOTATIONS) - {"id", "additionalItems", "dependencies"} -
    ({"items"} if d != DRAFT2020 else frozenset()) -
    ({"exclusiveMinimum", "exclusiveMaximum"} if d == DRAFT4 else frozenset())
    for d in DRAFTS}


def normalize(node: dict, draft: str, ptr: str, ignored: List[IgnoredKeyword]) -> Node:
    """node (a schema object of `draft`) in 2020-12 vocabulary; ignored keywords appended."""
    if isinstance(node, Node):
        return node
    legacy = draft in (DRAFT4, DRAFT6, DRAFT7)
    kept = _KEPT[draft]
    if not (legacy and "$ref" in node) and (
            kept.issuperset(node) or ("items" in node and not isinstance(node["items"], list)
                                      and kept.issuperset(node.keys() - {"items"}))):
        return _copy_node(node)
    defined = KEYWORDS[draft]
    out = Node(parts=[node])
    src = out.src
    if legacy and "$ref" in node:
        for k in node:
            if k != "$ref" and k not in ALWAYS_ANNOTATIONS and k not in ("id", "$id"):
                ignored.append(IgnoredKeyword(k, pointer(ptr, k), "beside $ref"))
        out["$ref"] = node["$ref"]
        for k in ("definitions", "$defs"):
            if k in node:
                out[k] = node[k]
        return out
    for k, v in node.items():
        if k in ALWAYS_ANNOTATIONS:
            out[k] = v
        elif k not in defined:
            ignored.append(IgnoredKeyword(k, pointer(ptr, k)))
        elif k == "id":
            out["$id"] = v
            src["$id"] = "id"
        elif k in ("exclusiveMinimum", "exclusiveMaximum") and draft == DRAFT4:
            continue            # read with minimum / maximum below
        elif k == "items" and isinstance(v, list) and draft != DRAFT2020:
            out["prefixItems"] = v
            src["prefixItems"] = "items"
            if "additionalItems" in node:
                out["items"] = node["additionalItems"]
                src["items"] = "additionalItems"
        elif k == "additionalItems":
            continue            # only means something beside array-form items (above)
        elif k == "dependencies":
            if isinstance(v, dict):
                req = {n: d for n, d in v.items() if isinstance(d, list)}
                sch = {n: d for n, d in v.items() if not isinstance(d, list)}
            else:
                req, sch = v, {}        # malformed: refused as dependentRequired
            if req:
                out["dependentRequired"] = req
                src["dependentRequired"] = "dependencies"
            if sch:
                out["dependentSchemas"] = sch
                src["dependentSchemas"] = "dependencies"
        else:
            out[k] = v
    if draft == DRAFT4:
        for bound, excl in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            flag = node.get(excl)
            if flag is True and bound in out:
                out[excl] = out.pop(bound)
                src[excl] = bound
            elif flag not in (None, True, False):
                out[excl] = flag        # malformed: the numbers module refuses it
    return out
