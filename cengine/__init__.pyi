"""Public type stub of cengine: the names of `cengine.__all__`, each with a one-line docstring.

The engine's public API (docs/api.md). Type checkers read this file in place of
cengine/__init__.py; tests/test_engine_public_stub.py holds it to the runtime objects (names,
parameters, defaults, members). The private Cython modules have their own stubs (`_*.pyi`).
"""
from contextlib import AbstractContextManager
from pathlib import Path
from typing import (Any, Callable, Dict, FrozenSet, Hashable, Iterable, List, NamedTuple,
                    Optional, Sequence, Tuple, Union)

import numpy as np

from ._mask import TokenTables as _TokenTables
from .automaton import Automaton as _Automaton
from .ir import GrammarIR as _GrammarIR

__all__: List[str]

_Schema = Union[Dict[str, Any], bool, str]
_PartLike = Union["Part", str]

# --- errors and limits -----------------------------------------------------------------------

class CompileError(ValueError):
    """A schema, grammar, regex or word list that cannot be enforced exactly (a ValueError)."""
    keyword: Optional[str]
    """JSON Schema: the keyword refused (e.g. "minimum"), else None."""
    pointer: Optional[str]
    """JSON Schema: JSON pointer into the schema where it stands ("" for the root), else None."""
    rule: Optional[str]
    """GBNF: the rule it happened in, else None."""
    line: Optional[int]
    """GBNF: 1-based line of the problem, else None."""
    column: Optional[int]
    """GBNF: 1-based column of the problem, else None."""
    reason: str
    """The message without the location suffix the str() adds."""
    def __init__(self, message: str, *, keyword: Optional[str] = None,
                 pointer: Optional[str] = None, rule: Optional[str] = None,
                 line: Optional[int] = None, column: Optional[int] = None) -> None:
        """An error with its message and whatever locates it."""

class LimitError(CompileError):
    """A documented limit (states, depth, repetition, schema size, compile budget) was exceeded."""
    limit: Optional[str]
    """The CompileBudget option exceeded ("max_compile_work", "max_dfa_growth"), else None."""
    def __init__(self, message: str, *, limit: Optional[str] = None, **where: Any) -> None:
        """An error naming the budget option (limit) and CompileError's location keywords."""

class CompileBudget:
    """What one compile may spend building its automaton; None: the default (docs/limits.md)."""
    max_work: Optional[int]
    """Work units (NFA states touched) for the whole grammar, >= 1."""
    max_dfa_growth: Optional[int]
    """DFA states a rule may have per NFA state reached so far (plus a slack); 0: no check."""
    def __init__(self, max_work: Optional[int] = None,
                 max_dfa_growth: Optional[int] = None) -> None:
        """A budget; ValueError unless each value is None or an integer in range."""

def budget_scope(budget: Optional[CompileBudget]) -> AbstractContextManager[None]:
    """Context manager: compiles inside the block use `budget` (None: the surrounding one)."""

# --- grammars and matchers -------------------------------------------------------------------

class Grammar:
    """An immutable compiled grammar, cached and safe to share between threads."""
    automaton: _Automaton
    """The automaton tables (internal)."""
    kind: str
    """Which front end made it: "json_schema", "gbnf", "regex", "lexicon", "structural", ..."""
    source: Any
    """What it was compiled from (the schema, the GBNF text, the pattern, the words, the part)."""
    ignored_keywords: Tuple[Any, ...]
    """JSON Schema: keywords without effect in the schema's draft, (keyword, pointer, why)."""
    def __init__(self, automaton: _Automaton, kind: str = "ir", source: Any = None) -> None:
        """Wrap built tables (internal: use the compile_* functions)."""
    @classmethod
    def from_ir(cls, g: _GrammarIR, kind: str = "ir", source: Any = None) -> Grammar:
        """Build the automaton of a grammar IR (internal: use the compile_* functions)."""
    def matcher(self, vocab: Optional[Vocabulary] = None) -> Matcher:
        """A new matcher at the start of a document; vocab for token masks (None: bytes only)."""
    def token_tables(self, vocab: Vocabulary) -> _TokenTables:
        """The per-vocabulary mask tables, built once per (grammar, vocabulary) and shared."""
    def nbytes(self) -> int:
        """Bytes the automaton tables hold (what the grammar cache counts)."""

class GrammarCache:
    """The LRU of compiled grammars, bounded by the bytes their tables hold."""
    max_bytes: int
    """The bound; the most recently used grammar always stays, however large."""
    hits: int
    """Lookups that found a grammar."""
    misses: int
    """Lookups that did not."""
    def __init__(self, max_bytes: int = 268435456) -> None:
        """An empty cache of at most max_bytes (default 256 MiB)."""
    def get_or_compile(self, key: Hashable, compile_fn: Callable[[], Grammar]) -> Grammar:
        """The grammar under key, compiled by compile_fn (collector paused) when absent."""
    def get(self, key: Hashable) -> Optional[Grammar]:
        """The grammar under key (now the most recently used), or None."""
    def put(self, key: Hashable, value: Grammar) -> Grammar:
        """Store value unless key already holds one; returns the stored one."""
    def get_or_make(self, key: Hashable, make: Callable[[], Grammar]) -> Grammar:
        """The grammar under key, made outside the lock and stored when absent."""
    def nbytes(self) -> int:
        """Bytes held, as the grammars reported them when they went in."""
    def values(self) -> List[Grammar]:
        """The grammars held, least recently used first."""
    def clear(self) -> None:
        """Drop every grammar."""
    def __len__(self) -> int:
        """Number of grammars held."""

def freeze_after_compiles(enabled: bool = True) -> None:
    """After each compile (none other running): gc.collect(), then gc.freeze() the survivors."""

class Matcher:
    """One document's state over a Grammar: accepts bytes or tokens, fills masks, closes."""
    grammar: Grammar
    """The grammar it follows."""
    vocab: Optional[Vocabulary]
    """The vocabulary of its tokens and masks (None: bytes only)."""
    def __init__(self, grammar: Grammar, vocab: Optional[Vocabulary] = None) -> None:
        """A matcher at the start of a document (Grammar.matcher makes one)."""
    def accept_bytes(self, data: bytes) -> bool:
        """Consume all of data or nothing; False leaves the state unchanged."""
    def can_accept_bytes(self, data: bytes) -> bool:
        """Whether accept_bytes(data) would succeed, leaving the state unchanged."""
    def accept_token(self, token_id: int) -> bool:
        """Consume one token of the vocabulary (all or nothing; eos only when is_accepting())."""
    def is_accepting(self) -> bool:
        """The bytes so far are a complete, legal document."""
    def is_terminated(self) -> bool:
        """An eos token was accepted: the document is finished."""
    def completion(self) -> bytes:
        """The closer: the shortest bytes that make the document complete (b"" if accepting)."""
    def completion_length(self) -> int:
        """len(completion()), without building the bytes."""
    def allowed_bytes(self) -> List[int]:
        """The bytes (0..255) that may come next."""
    def forced_bytes(self, limit: int = 4096) -> bytes:
        """The longest byte string that is the only legal continuation (at most limit bytes)."""
    def copy(self) -> Matcher:
        """An independent copy of the state."""
    def rollback(self, n_tokens: int) -> None:
        """Undo the last n accepts (each accept_token / accept_bytes call is one)."""
    @property
    def n_stacks(self) -> int:
        """Number of parse stacks alive (more than one: the prefix is ambiguous)."""
    def stacks(self) -> List[Tuple[Tuple[int, ...], int]]:
        """The live stacks as (positions top first, whitespace run), for tests and debugging."""
    def fill_mask(self, out: np.ndarray) -> None:
        """Bit i % 32 of int32 word i // 32 of out := token i may come next (eos iff accepting)."""

# --- compiling -------------------------------------------------------------------------------

def compile_json_schema(schema: _Schema, *, closed_objects: bool = True,
                        whitespace_budget: Optional[int] = 64, max_depth: int = 64,
                        surrounding_whitespace: bool = True, property_order: str = "declared",
                        budget: Optional[CompileBudget] = None) -> Grammar:
    """Compile a JSON Schema (dict, bool or JSON text); CompileError names what it cannot hold."""

def compile_any_json(*, whitespace_budget: Optional[int] = 64, max_depth: int = 64,
                     surrounding_whitespace: bool = True,
                     budget: Optional[CompileBudget] = None) -> Grammar:
    """Any JSON value (compile_json_schema(True) with these options)."""

def compile_gbnf(text: str, root: str = "root", *,
                 budget: Optional[CompileBudget] = None) -> Grammar:
    """Compile llama.cpp GBNF text from rule `root`; errors carry .rule, .line and .column."""

def compile_regex(pattern: str, *, budget: Optional[CompileBudget] = None) -> Grammar:
    """The whole output matches pattern (ECMA-262 syntax, as JSON Schema uses it)."""

def compile_lexicon(words: Iterable[str], *, budget: Optional[CompileBudget] = None) -> Grammar:
    """Output made only of these words (docs/lexicon.md)."""

# --- masks and vocabularies ------------------------------------------------------------------

class Vocabulary:
    """Token id -> output bytes, plus the end-of-generation ids; immutable once built."""
    tokens: List[bytes]
    """The bytes of each token id (b"": never allowed)."""
    eos_ids: FrozenSet[int]
    """The end-of-generation ids, allowed in a mask iff the matcher is accepting."""
    name: Optional[str]
    """A label for logs (the GGUF's general.name)."""
    bos_id: Optional[int]
    """The beginning-of-sequence id, if any."""
    eos_id: Optional[int]
    """The smallest eos id, if any."""
    eot_id: Optional[int]
    """The end-of-turn id of a GGUF, if any."""
    add_bos: bool
    """Whether prompts start with bos_id (GGUF tokenizer.ggml.add_bos_token)."""
    model: Optional[str]
    """The GGUF tokenizer model ("gpt2", "llama", ...), None if built from tokens."""
    special_texts: Dict[int, bytes]
    """Literal text of control tokens that print nothing (for templates and logs)."""
    withheld_ids: FrozenSet[int]
    """Ids given b"" although llama.cpp might print them."""
    special_ids: Dict[int, str]
    """Id -> text of the tokens a grammar may name with Special."""
    def __init__(self, tokens: Sequence[bytes], eos_ids: Iterable[int] = (), *,
                 name: Optional[str] = None, bos_id: Optional[int] = None,
                 special_texts: Optional[Dict[int, bytes]] = None,
                 special_ids: Optional[Dict[int, str]] = None) -> None:
        """A vocabulary from one bytes value per token id and the eos ids."""
    @classmethod
    def from_gguf(cls, path: Union[str, Path], *, name: Optional[str] = None) -> Vocabulary:
        """The tokenizer of a GGUF file (a full model or a vocab-only file)."""
    @classmethod
    def from_hf_tokenizer(cls, tokenizer: Any, *, vocab_size: Optional[int] = None,
                          eos_ids: Iterable[int] = (),
                          name: Optional[str] = None) -> Vocabulary:
        """A transformers / tokenizers tokenizer's vocabulary, equal to its model's from_gguf."""
    @property
    def size(self) -> int:
        """Number of token ids."""
    def token_bytes(self, token_id: int) -> bytes:
        """The bytes token_id writes."""
    @property
    def fingerprint(self) -> str:
        """sha256 over the token bytes and eos ids: equal fingerprints, equal masks."""
    def with_special_tokens(self) -> Vocabulary:
        """A copy whose special_ids are spelled as Special spells them (for composed grammars)."""
    def special_token_texts(self) -> FrozenSet[str]:
        """The texts a grammar over this vocabulary may name with Special."""
    def __len__(self) -> int:
        """Number of token ids."""

def mask_words(vocab_size: int) -> int:
    """int32 words a mask over vocab_size tokens needs: ceil(vocab_size / 32)."""

def apply_mask(logits: np.ndarray, mask: np.ndarray) -> None:
    """Set float32 logits[i] = -inf in place wherever bit i of the int32 mask is 0."""

def prepare(vocab: Vocabulary, *, json: bool = True) -> None:
    """Build what every mask over vocab shares (and, json=True, the JSON tables) ahead of time."""

# --- composition (docs/composition.md) -------------------------------------------------------

class Part:
    """A piece of a composed output; immutable, equal parts have equal keys."""
    key: Tuple[Any, ...]
    """The structured source: what equality, hashing and the grammar cache use."""

class Text(Part):
    """The literal text (UTF-8)."""
    text: str
    """The text."""
    def __init__(self, text: str) -> None:
        """The part writing exactly text."""

class Special(Part):
    """The model's special token of this text, matched by that token alone."""
    text: str
    """The token's text, e.g. "<tool_call>"."""
    def __init__(self, text: str) -> None:
        """The part writing the special token of text (non-empty)."""

def special_bytes(text: str) -> bytes:
    """The marked bytes (0xFE text 0xFF) a special token stands for in grammars and vocabularies."""

def plain_text(data: bytes) -> bytes:
    """data with the special-token marks removed: each special token as its text."""

class JsonSchema(Part):
    """One instance of a JSON Schema, compiled as compile_json_schema, no surrounding whitespace."""
    schema: Union[Dict[str, Any], bool]
    """A copy of the schema."""
    closed_objects: bool
    """As compile_json_schema's option."""
    property_order: str
    """As compile_json_schema's option."""
    def __init__(self, schema: _Schema, *, closed_objects: bool = True,
                 property_order: str = "declared") -> None:
        """The part of this schema (dict, bool or JSON text)."""

class Gbnf(Part):
    """One sentence of a llama.cpp GBNF grammar, its rules renamed apart from the rest."""
    text: str
    """The GBNF text."""
    root: str
    """The start rule."""
    def __init__(self, text: str, root: str = "root") -> None:
        """The part of this grammar from rule root."""

class Regex(Part):
    """One string matching the whole pattern (compile_regex's syntax)."""
    pattern: str
    """The pattern."""
    def __init__(self, pattern: str) -> None:
        """The part of this pattern."""

class Concat(Part):
    """The parts one after the other."""
    parts: Tuple[Part, ...]
    """The parts (strings made Text)."""
    def __init__(self, *parts: _PartLike) -> None:
        """The concatenation (a string stands for Text)."""

class OneOf(Part):
    """Exactly one of the parts."""
    parts: Tuple[Part, ...]
    """The alternatives (strings made Text)."""
    def __init__(self, *parts: _PartLike) -> None:
        """The union of at least one part (a string stands for Text)."""

class Repeat(Part):
    """part between min and max times (max None: unbounded), separator between two."""
    part: Part
    """The repeated part."""
    min: int
    """Fewest repetitions."""
    max: Optional[int]
    """Most repetitions; None: unbounded."""
    separator: Part
    """What stands between two repetitions."""
    def __init__(self, part: _PartLike, min: int = 0, max: Optional[int] = None,
                 separator: _PartLike = "") -> None:
        """The repetition; CompileError unless 0 <= min <= max."""

class Tagged(Part):
    """begin, then content, then end: one member of a union of tagged schemas."""
    begin: str
    """The opening text."""
    content: Part
    """What stands between."""
    end: str
    """The closing text."""
    def __init__(self, begin: str, content: _PartLike, end: str) -> None:
        """The tagged part."""

class AnyText(Part):
    """Any text; as a Tagged content, any text without the tag's end (which closes it)."""
    def __init__(self) -> None:
        """The part."""

class TriggeredTags(Part):
    """Free text where each trigger opens one of the tags whose begin starts with it."""
    triggers: Tuple[str, ...]
    """The texts watched for in the free text."""
    tags: Tuple[Tagged, ...]
    """The tags; each begin starts with a trigger."""
    at_least_one: bool
    """Whether a tag must come."""
    stop_after_first: bool
    """Whether nothing follows the first tag."""
    def __init__(self, triggers: Iterable[str], tags: Iterable[Tagged], *,
                 at_least_one: bool = False, stop_after_first: bool = False) -> None:
        """The part; CompileError for no or empty triggers, or a tag no trigger opens."""

class TriggeredRegion(Part):
    """Free text until trigger, then region, then end; repeat=True allows more blocks."""
    trigger: Union[str, Part]
    """Text or special tokens (fixed bytes) that open the region."""
    region: Part
    """The constrained region."""
    end: Union[str, Part]
    """What closes the region."""
    repeat: bool
    """Whether `separator trigger region end` blocks may follow."""
    separator: Part
    """What stands between two blocks."""
    def __init__(self, trigger: _PartLike, region: _PartLike, end: _PartLike, *,
                 repeat: bool = False, separator: _PartLike = "") -> None:
        """The region; CompileError for an empty or non-fixed trigger."""
    @property
    def trigger_bytes(self) -> bytes:
        """What a decode loop looks for in the matcher's bytes (marked for a Special)."""

class TriggeredGrammar(NamedTuple):
    """compile_triggered's result, unpacking as (trigger, grammar of what follows it)."""
    trigger: Union[str, bytes]
    """The trigger text, or a Special trigger's marked bytes."""
    grammar: Grammar
    """The grammar of what follows the trigger."""

def compile_structural(part: _PartLike, *, whitespace_budget: Optional[int] = 64,
                       max_depth: int = 64, budget: Optional[CompileBudget] = None) -> Grammar:
    """The grammar of the whole output being part, from the first byte."""

def compile_triggered(region: TriggeredRegion, *, whitespace_budget: Optional[int] = 64,
                      max_depth: int = 64,
                      budget: Optional[CompileBudget] = None) -> TriggeredGrammar:
    """The lazy form: free text until region's trigger, then the grammar of what follows."""

# --- decision points (llamay_choice_logprobs) ------------------------------------------------

class Alternative:
    """One legal JSON value at a decision point: its shortest spelling and its value."""
    text: bytes
    """The shortest spelling the grammar allows there."""
    value: Any
    """json.loads(text): str, int, float, bool or None."""
    def __init__(self, text: bytes, value: Any) -> None:
        """A frozen pair."""

def value_alternatives(matcher: Matcher, *, max_alternatives: int = 64,
                       max_value_bytes: int = 256,
                       max_number_bytes: int = 32) -> Optional[List[Alternative]]:
    """The complete JSON scalars that may start at the matcher's position, or None if too many."""

def value_key(text: bytes) -> Optional[Tuple[Any, ...]]:
    """Identity of a JSON scalar's spelling under JSON equality (1 and 1.0 one), or None."""
