"""What the parts of the schema compiler share. compiler._Compiler is composed of the parts
refs.References, conjunction.Conjunction, negation.Negation, enums.Enums and objects.Objects;
each part reads state that _Compiler.__init__ sets and calls methods another part defines.
`CompilerPart` declares both, with their types, so that each part type-checks on its own:
declarations only (the methods exist for type checkers alone, each is defined once by the part
named beside it), so nothing here runs and the method resolution order finds the same code."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .. import ir
from .drafts import IgnoredKeyword, Node


class CompilerPart:
    # set by compiler._Compiler.__init__
    g: ir.GrammarIR
    root: Any
    prefix: str
    closed: bool
    any_order: bool
    draft: Any
    ignored: List[IgnoredKeyword]
    _regex_exprs: Dict[str, ir.Expr]
    ref_rules: Dict[str, str]
    conj_rules: Dict[str, str]
    _flat_refs: Dict[str, Tuple[list, Optional[int]]]
    _flat_depth: int
    _flat_nodes: Dict[int, Tuple[dict, list]]
    _merged_nodes: Dict[Tuple[int, Tuple[str, str]], Tuple[dict, Any]]
    _json_texts: Dict[int, Tuple[Any, str]]
    _facts_memo: Dict[tuple, tuple]
    _property_values: Dict[int, Tuple[dict, ir.Expr]]
    shared_parts: Dict[tuple, str]
    shared_keys: List[ir.Expr]
    _member_rules: Dict[Tuple[str, int], Tuple[ir.Expr, str]]
    _member_col: Optional[ir.Expr]
    _member_col_items: Optional[tuple]
    _embedded: Optional[bool]
    _anchors: Optional[Dict[str, List[Tuple[Any, str, str]]]]
    _validator: Any

    if TYPE_CHECKING:
        # compiler._Compiler
        def compile(self, schema: Any, ptr: str) -> ir.Expr:
            raise NotImplementedError

        def _rule_name(self, ptr: str, kind: str, keyword: Optional[str] = None) -> str:
            raise NotImplementedError

        def _count(self, schema: dict, key: str, ptr: str) -> Optional[int]:
            raise NotImplementedError

        def _validating_keys(self, schema: dict) -> List[str]:
            raise NotImplementedError

        def _kw(self, schema: dict, key: str) -> str:
            raise NotImplementedError

        def _without(self, schema: Node, *keys: str) -> Node:
            raise NotImplementedError

        def _norm(self, schema: dict, ptr: str) -> Node:
            raise NotImplementedError

        # conjunction.Conjunction
        def _merged(self, schema: Any, ptr: str, origin: Tuple[str, str]) -> Any:
            raise NotImplementedError

        def _key_schemas(self, side: dict, name: str, ptr: str) -> list:
            raise NotImplementedError

        # negation.Negation
        def _negate(self, x: Any, ptr: str, depth: int = 0, ctx: Any = None) -> Any:
            raise NotImplementedError

        def _facts(self, schema: Any, ptr: str, closed: bool, depth: int = 0) -> Any:
            raise NotImplementedError

        def _disjoint(self, f: Any, g: Any, g_schema: Any, f_schema: Any) -> bool:
            raise NotImplementedError

        # enums.Enums
        def _valid_parts(self, value: Any, schema: Any) -> Optional[bool]:
            raise NotImplementedError

        # refs.References
        def _resolve(self, ref: Any, ptr: str, keyword: str = "$ref") -> Tuple[Any, str]:
            raise NotImplementedError
