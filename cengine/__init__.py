"""cengine: JSON Schema, GBNF, regex and word lists compiled onto one byte-level pushdown
automaton, with per-token masks over a vocabulary and a closer for truncated documents.

Public names follow ../shared/contract.md.
"""
from __future__ import annotations

import json as _json
from typing import Iterable, Optional, Union

from .alternatives import Alternative, value_alternatives, value_key
from .automaton import CompileBudget, budget_scope
from .errors import CompileError, LimitError
from .grammar import CACHE, Grammar, GrammarCache, freeze_after_compiles
from ._matcher import Matcher
# grammar composition (docs/composition.md)
from .compose import (AnyText, Concat, Gbnf, JsonSchema, OneOf, Part, Regex, Repeat, Special,
                      Tagged, Text, TriggeredGrammar, TriggeredRegion, TriggeredTags,
                      compile_structural, compile_triggered)
from .special import plain_text, special_bytes

__all__ = [
    "CompileError", "LimitError", "CompileBudget", "budget_scope",
    "Grammar", "GrammarCache", "Vocabulary", "Matcher",
    "compile_json_schema", "compile_gbnf", "compile_regex", "compile_lexicon", "compile_any_json",
    "apply_mask", "mask_words", "prepare", "freeze_after_compiles",
    "Part", "Text", "Special", "special_bytes", "plain_text", "JsonSchema", "Gbnf", "Regex",
    "Concat", "OneOf", "Repeat", "Tagged", "AnyText", "TriggeredTags",
    "TriggeredRegion", "TriggeredGrammar", "compile_structural", "compile_triggered",
    "Alternative", "value_alternatives", "value_key",
]


def __getattr__(name):
    # Vocabulary (with the GGUF reader) and apply_mask's extension load on first use. The rest
    # of the engine loads with the package: `import cengine` imports 8 of its 11 Cython
    # extensions (the builder's through cengine.automaton, the matcher's and the masks' through
    # cengine.grammar), a few ms of an import that numpy dominates; prepare() builds the
    # shared tables ahead of the first request.
    if name == "Vocabulary":
        from .vocab import Vocabulary
        return Vocabulary
    if name == "apply_mask":
        from ._bitmask import apply_mask
        return apply_mask
    raise AttributeError(name)


def prepare(vocab, *, json: bool = True) -> None:
    """Build what every mask over `vocab` shares, ahead of the first request: the token trie,
    its whitespace-run split and slices, and (json=True) the tables of the JSON rules that
    every schema reuses (string bodies, numbers, integers), the schema compiler's validator
    module and the enforced formats' strings. Idempotent; later grammars find these in the
    shared cache."""
    from ._trie import trie_of
    trie = trie_of(vocab)
    trie.ws_split()
    for k in trie.slice_sizes():
        trie.slice(k)
    trie.class_prune()
    trie.token_lengths()
    # a bounded string's character runs (TokenTables._character_run)
    trie.plain_chars()
    trie.warm_char_slices()
    trie.string_rest()
    if json:
        from ._tables import any_character_body
        any_character_body()
        # the validator the schema compiler checks enum values and oneOf branches with: its
        # first import builds parsers for a second, which would land on some request
        import jsonschema  # noqa: F401
        # the code points where ECMA-262 and Python's re read `\d`, `\w`, `\s` differently
        # (the extra keys beside a patternProperties pattern leave them out): read off re
        # once per process, 20-30 ms a class, which would land on the first such schema
        from .schema.pattern_names import warm_disagreements
        warm_disagreements()
        # every enforced format's string and its determinized positions, made once per
        # process (0.2-4.5 ms a format): else on the first schema with that format
        from .schema.strings import warm_formats
        warm_formats()
        g = compile_any_json()
        tables = g.token_tables(vocab)
        for p in tables.shared_positions():
            tables.table(p)


def mask_words(vocab_size: int) -> int:
    """int32 words needed for a mask over vocab_size tokens."""
    return (vocab_size + 31) // 32


# json.dumps(schema, separators=(",", ":")), without a new encoder object per compile
_SCHEMA_KEY = _json.JSONEncoder(separators=(",", ":")).encode
_FRONT_END: tuple = ()


def _schema_front_end() -> tuple:
    """(cengine.schema, check_property_order): the JSON Schema front end, imported on first use
    (`import cengine` does not load it) and then held here, not imported again per compile.
    schema_to_ir is read from the package at each compile, so a wrapper set there (the
    compile-once tests count compiles so) sees every compile."""
    global _FRONT_END
    if not _FRONT_END:
        from . import schema
        from .schema.compiler import check_property_order, check_unproductive
        _FRONT_END = (schema, check_property_order, check_unproductive)
    return _FRONT_END


def compile_json_schema(schema: Union[dict, bool, str], *, closed_objects: bool = True,
                        whitespace_budget: Optional[int] = 64, max_depth: int = 64,
                        surrounding_whitespace: bool = True,
                        property_order: str = "declared",
                        budget: Optional[CompileBudget] = None) -> Grammar:
    """Compile a JSON Schema (dict, bool or JSON text). Unenforceable keywords raise CompileError.

    surrounding_whitespace=True accepts whitespace before and after the root value (validating
    text as written); False is the form for generating: once the root value closes, only the
    end of the output may follow, so a finished document ends the generation.

    property_order="declared" writes an object's declared properties in the schema's order
    (what generation should produce); "any" accepts them in every order, each at most once
    (for validating documents; docs/json-schema.md gives its limit).

    budget (every compile function takes it) bounds the automaton construction; None: the
    engine's defaults (docs/limits.md). It is not part of the cache key: a grammar already
    compiled is returned whatever the budget."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = _json.loads(schema)
        except ValueError as e:
            raise CompileError(f"schema is not valid JSON: {e}", pointer="") from None
    surrounding_whitespace = bool(surrounding_whitespace)
    front_end, check_property_order, check_unproductive = _schema_front_end()
    check_property_order(property_order)
    # keyed on the schema as written: declared property order is part of the grammar
    try:
        schema_text = _SCHEMA_KEY(schema)
    except RecursionError:
        raise LimitError("the schema nests too deeply to compile (past Python's recursion "
                         "limit)", pointer="") from None
    key = ("schema", schema_text,
           closed_objects, whitespace_budget, max_depth, surrounding_whitespace, property_order)

    def build():
        with budget_scope(budget):
            # the proof that the root derives a document is asked only of a grammar the
            # build refuses (one whose root derives none always is): the refusal is then
            # the schema's, as schema_to_ir alone gives it
            g = front_end.schema_to_ir(schema, closed_objects=closed_objects,
                                       whitespace_budget=whitespace_budget,
                                       max_depth=max_depth,
                                       surrounding_whitespace=surrounding_whitespace,
                                       property_order=property_order, check_productive=False)
            try:
                return Grammar.from_ir(g, "json_schema", schema)
            except CompileError as e:
                refused = e
            check_unproductive(g)
            raise refused
    return CACHE.get_or_compile(key, build)


def compile_any_json(*, whitespace_budget: Optional[int] = 64, max_depth: int = 64,
                     surrounding_whitespace: bool = True,
                     budget: Optional[CompileBudget] = None) -> Grammar:
    """Any valid JSON value (the `format: "json"` modes; OpenAI's `json_object` is the schema
    {"type": "object"}). surrounding_whitespace as for compile_json_schema."""
    return compile_json_schema(True, whitespace_budget=whitespace_budget, max_depth=max_depth,
                               surrounding_whitespace=surrounding_whitespace, budget=budget)


def compile_gbnf(text: str, root: str = "root", *,
                 budget: Optional[CompileBudget] = None) -> Grammar:
    """Compile llama.cpp GBNF text. Errors carry .rule, .line and .column."""
    def build():
        from .gbnf import parse_gbnf
        with budget_scope(budget):
            return Grammar.from_ir(parse_gbnf(text, root=root), "gbnf", text)
    return CACHE.get_or_compile(("gbnf", text, root), build)


def compile_regex(pattern: str, *, budget: Optional[CompileBudget] = None) -> Grammar:
    """The whole output must match `pattern` (ECMA-262 syntax as JSON Schema uses it)."""
    def build():
        from .regex import regex_to_ir
        with budget_scope(budget):
            return Grammar.from_ir(regex_to_ir(pattern), "regex", pattern)
    return CACHE.get_or_compile(("regex", pattern), build)


def compile_lexicon(words: Iterable[str], *,
                    budget: Optional[CompileBudget] = None) -> Grammar:
    """Output made only of these words; see docs/lexicon.md for what may stand between them."""
    if isinstance(words, (str, bytes)):
        raise CompileError("a lexicon is a list of words, not a single string")
    words = tuple(words)

    def build():
        from .lexicon import lexicon_to_ir
        with budget_scope(budget):
            return Grammar.from_ir(lexicon_to_ir(words), "lexicon", words)
    return CACHE.get_or_compile(("lexicon", words), build)
