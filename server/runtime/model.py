"""Constrained generation on llama.cpp: the decode loop, fast-forward, budgets and the closer.

One step: the grammar fills the token mask (before the forward pass: it depends only on the
matcher); if the document is complete and nothing may follow, generation ends without
another pass; if the grammar forces the next bytes, their tokens are appended without
sampling (fast-forward) and evaluated in one batch with the next pass; otherwise the pending
tokens are evaluated, the mask is applied to the logits, and the sampler picks a token,
which the matcher accepts. When `max_tokens` (or the context) runs out inside a document,
the matcher's completion is appended (the "closer") and the reason is "length": the result
still parses and validates. See docs/generation.md.
"""
from __future__ import annotations

import collections
import logging
import threading
from pathlib import Path
from typing import Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

import cengine

from . import chat_template as _chat
from .decisions import DecisionRecorder
from .llama_backend import DEFAULT_BRANCHES, DEFAULT_CACHE_SLOTS, Decoder, LlamaRuntime
from .sampling import REPEAT_LAST_N, NoTokenAllowed, Sampler, apply_repeat_penalty, logprobs_of
from .stops import StopScanner
from .types import (ChoiceScope, DecisionsEvent, Event, FinishEvent, LazyGrammar,
                    ReasoningPlan, SamplingParams, TokenEvent, ToolPromptFormat)

log = logging.getLogger("llamay.generate")


def _numpy_apply_mask(logits: np.ndarray, mask: np.ndarray) -> None:
    n = logits.shape[0]
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[:n].astype(bool)
    logits[~bits] = -np.inf


def _mask_kernel():
    try:
        return cengine.apply_mask
    except (ImportError, AttributeError):     # the Cython kernel is not built: same result, slower
        return _numpy_apply_mask


class Model:
    """A GGUF model loaded with llama.cpp, generating under cengine grammars. Up to
    `n_parallel` generations may run at once, each on its own thread (None: chosen from the
    context and the memory, llama_backend.auto_parallel); their forward passes are batched."""

    def __init__(self, path: str, *, n_ctx: int = 4096, n_threads: Optional[int] = None,
                 n_batch: int = 512, fast_forward: bool = True,
                 n_branches: int = DEFAULT_BRANCHES, n_threads_batch: Optional[int] = None,
                 n_gpu_layers: int = 0, cache_slots: int = DEFAULT_CACHE_SLOTS,
                 cache_tokens: Optional[int] = None, n_parallel: Optional[int] = 1):
        self.path = str(path)
        self.name = Path(self.path).stem
        self.runtime = LlamaRuntime(self.path, n_ctx=n_ctx, n_threads=n_threads, n_batch=n_batch,
                                    n_branches=n_branches, n_threads_batch=n_threads_batch,
                                    n_gpu_layers=n_gpu_layers, cache_slots=cache_slots,
                                    cache_tokens=cache_tokens, n_parallel=n_parallel)
        self.metadata: Dict[str, str] = self.runtime.metadata
        self.chat_template: Optional[str] = self.metadata.get("tokenizer.chat_template") or None
        self.n_ctx = self.runtime.n_ctx
        # requests that decode at once (one KV sequence each, batched forward passes)
        self.n_parallel = self.runtime.n_parallel
        # the matcher's vocabulary: special tokens (framing such as <tool_call>, [TOOL_CALLS],
        # <|channel|>) spelled as cengine.Special spells them, so a grammar can ask for exactly
        # that token; what each token prints is token_bytes()
        self.vocab = cengine.Vocabulary.from_gguf(self.path).with_special_tokens()
        self.special_tokens = self.vocab.special_token_texts()
        # the token trie and the shared JSON tables, so the first request doesn't pay for them
        cengine.prepare(self.vocab)
        if self.vocab.size > self.runtime.n_vocab:
            raise ValueError(f"vocabulary of {self.vocab.size} tokens but the model has "
                             f"{self.runtime.n_vocab} logits")
        self.fast_forward = fast_forward
        eos = set(int(i) for i in self.vocab.eos_ids)
        self.eos_ids = frozenset(eos)
        self.stop_ids = frozenset(eos | set(self.runtime.eog_ids))
        words = cengine.mask_words(self.vocab.size)
        self._mask_words = words
        # every bit but the EOS ids: `mask & _not_eos` is zero iff only EOS may come next
        not_eos = np.full(words, 0xFFFFFFFF, np.uint32)
        for i in eos:
            if i < self.vocab.size:
                not_eos[i // 32] &= np.uint32(~(1 << (i % 32)) & 0xFFFFFFFF)
        if self.vocab.size % 32:
            not_eos[-1] &= np.uint32((1 << (self.vocab.size % 32)) - 1)
        self._not_eos = not_eos.view(np.int32)
        self._apply_mask = _mask_kernel()
        self._pieces: Dict[int, bytes] = {}
        self._by_bytes: Optional[Dict[bytes, int]] = None
        self._max_token_len = 0

    # --- text --------------------------------------------------------------------------------
    def tokenize(self, text: str, *, add_bos: bool = True, special: bool = True) -> List[int]:
        ids = self.runtime.tokenize(text.encode("utf-8"), add_special=add_bos,
                                    parse_special=special)
        bos = self.runtime.bos_id
        # a template that writes bos_token itself plus the tokenizer's own BOS: keep one
        if len(ids) >= 2 and ids[0] == bos and ids[1] == bos:
            ids = ids[1:]
        return ids

    def detokenize(self, ids: List[int]) -> bytes:
        return self.runtime.detokenize(list(ids))

    def render_chat(self, messages: List[dict], *, tools: Optional[List[dict]] = None,
                    tool_format: Optional[ToolPromptFormat] = None,
                    add_generation_prompt: bool = True,
                    template_vars: Optional[dict] = None) -> str:
        return _chat.render_chat(self.chat_template, messages, tools=tools, tool_format=tool_format,
                                 add_generation_prompt=add_generation_prompt,
                                 template_vars=template_vars,
                                 bos_token=self.runtime.token_text(self.runtime.bos_id),
                                 eos_token=self.runtime.token_text(self.runtime.eos_id))

    def token_bytes(self, token_id: int) -> bytes:
        """What a generated token adds to the output: the vocabulary's bytes (what the matcher
        consumed; a special token's text without the marks), or llama.cpp's piece for tokens
        the vocabulary leaves empty."""
        b = self._pieces.get(token_id)
        if b is None:
            b = self.vocab.tokens[token_id] if token_id < self.vocab.size else b""
            if b:
                b = cengine.plain_text(b)
            else:
                b = self.runtime.token_to_piece(token_id)
            self._pieces[token_id] = b
        return b

    def marked(self, text: str) -> bytes:
        """`text` as the matcher's bytes spell it: each special token of the vocabulary that
        occurs in it (longest first) as its marked spelling, the rest as UTF-8."""
        if not text:
            return b""
        specials = sorted((t for t in self.special_tokens if t in text), key=len, reverse=True)
        out, i = bytearray(), 0
        while i < len(text):
            for s in specials:
                if text.startswith(s, i):
                    out += cengine.special_bytes(s)
                    i += len(s)
                    break
            else:
                out += text[i].encode("utf-8")
                i += 1
        return bytes(out)

    def matcher_bytes(self, token_id: int) -> bytes:
        """The bytes a matcher consumes for this token (a special token's marked spelling)."""
        return self.vocab.tokens[token_id] if token_id < self.vocab.size else b""

    def _byte_index(self) -> Dict[bytes, int]:
        if self._by_bytes is None:
            idx: Dict[bytes, int] = {}
            for i in range(self.vocab.size):
                if i in self.stop_ids:
                    continue
                b = self.vocab.tokens[i]
                if b and b not in idx:
                    idx[b] = i
            # the length first: another thread sees the index only once both are set
            self._max_token_len = max((len(b) for b in idx), default=1)
            self._by_bytes = idx
        return self._by_bytes

    def prefix_tokens(self, data: bytes) -> List[int]:
        """The vocabulary tokens (end tokens excepted) whose bytes are a prefix of `data`,
        shortest first; one id per spelling."""
        index = self._byte_index()
        out = []
        for n in range(1, min(self._max_token_len, len(data)) + 1):
            t = index.get(bytes(data[:n]))
            if t is not None:
                out.append(t)
        return out

    def tokens_for_bytes(self, data: bytes, matcher=None, limit: Optional[int] = None
                         ) -> Tuple[List[int], int]:
        """Tokens spelling a prefix of `data` exactly: the model's own tokenisation while its
        tokens line up, then greedy longest matches. With a matcher each token must be
        accepted (and is). Returns (ids, bytes covered)."""
        ids: List[int] = []
        pos = 0
        if limit is not None and limit <= 0:
            return ids, 0
        t: Optional[int]
        for t in self.runtime.tokenize(_valid_utf8_prefix(data), add_special=False,
                                       parse_special=False):
            b = self.vocab.tokens[t] if t < self.vocab.size else b""
            if not b or data[pos:pos + len(b)] != b or t in self.stop_ids:
                break
            if matcher is not None and not matcher.accept_token(t):
                break
            ids.append(t)
            pos += len(b)
            if limit is not None and len(ids) >= limit:
                return ids, pos
        if pos < len(data):
            index = self._byte_index()
            while pos < len(data) and (limit is None or len(ids) < limit):
                for n in range(min(self._max_token_len, len(data) - pos), 0, -1):
                    t = index.get(bytes(data[pos:pos + n]))
                    if t is not None and (matcher is None or matcher.accept_token(t)):
                        ids.append(t)
                        pos += n
                        break
                else:
                    break
        return ids, pos

    # --- generation ----------------------------------------------------------------------------
    def generate(self, prompt: Union[str, Sequence[int]], *,
                 grammar: Optional["cengine.Grammar"] = None,
                 params: SamplingParams, lazy_grammar: Optional[LazyGrammar] = None,
                 cancel: Optional[threading.Event] = None,
                 choice: Optional[ChoiceScope] = None,
                 reasoning: Optional[ReasoningPlan] = None) -> Iterator[Event]:
        """Events of one generation (see the module doc). Arguments are checked here, before
        the first event, so callers can map mistakes to a 400. With `choice`, the decision
        points of the constrained output are probed as they are met (server/runtime/
        decisions.py) and reported in one DecisionsEvent just before the FinishEvent."""
        if grammar is not None and lazy_grammar is not None:
            raise ValueError("give either grammar or lazy_grammar, not both")
        if lazy_grammar is not None and not lazy_grammar[0]:
            raise ValueError("the lazy grammar trigger must not be empty")
        if params.max_tokens is not None and params.max_tokens < 0:
            raise ValueError("max_tokens must be >= 0")
        if params.logprobs is not None and params.logprobs < 0:
            raise ValueError("logprobs must be >= 0")
        if params.repeat_penalty <= 0:
            raise ValueError("repeat_penalty must be > 0")
        sampler = Sampler(temperature=params.temperature, top_p=params.top_p, top_k=params.top_k,
                          min_p=params.min_p, seed=params.seed)
        ids = self.tokenize(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
        if not ids:
            ids = [self.runtime.bos_id] if self.runtime.bos_id >= 0 else []
        if not ids:
            raise ValueError("the prompt is empty")
        if len(ids) >= self.n_ctx:
            raise ValueError(f"the prompt has {len(ids)} tokens; the context holds {self.n_ctx}")
        bad = [t for t in ids if t < 0 or t >= self.runtime.n_vocab]
        if bad:
            raise ValueError(f"prompt token id {bad[0]} is outside the vocabulary")
        thought = _Thought(self, reasoning) if reasoning is not None else None
        if choice is None:
            return self._run(ids, grammar, params, sampler, lazy_grammar, cancel, None, thought)
        recorder = DecisionRecorder(self, choice)
        return self._with_decisions(
            self._run(ids, grammar, params, sampler, lazy_grammar, cancel, recorder, thought),
            recorder)

    @staticmethod
    def _with_decisions(events: Iterator[Event], recorder: DecisionRecorder) -> Iterator[Event]:
        for ev in events:
            if isinstance(ev, FinishEvent):
                yield DecisionsEvent(recorder.decisions())
            yield ev

    def _run(self, prompt_ids: List[int], grammar, params: SamplingParams, sampler: Sampler,
             lazy, cancel, recorder: Optional[DecisionRecorder],
             thought: Optional["_Thought"] = None) -> Iterator[Event]:
        # a decoder sequence of its own for the whole generation: its forward passes go in one
        # batch with the other requests' (llama_backend.Decoder, batching.py)
        dec = self.runtime.acquire(prompt_ids)
        try:
            if recorder is not None:
                recorder.rt = dec
            yield from self._decode_loop(dec, prompt_ids, grammar, params, sampler, lazy, cancel,
                                         recorder, thought)
        finally:
            self.runtime.release(dec)

    def _decode_loop(self, rt: Decoder, prompt_ids: List[int], grammar, params: SamplingParams,
                     sampler: Sampler, lazy, cancel, recorder: Optional[DecisionRecorder],
                     thought: Optional["_Thought"]) -> Iterator[Event]:
        vsize = self.vocab.size
        mask = np.zeros(self._mask_words, np.int32)   # per generation: others run beside it
        # inside a thought no constraint applies: the answer's matcher starts after it
        matcher = grammar.matcher(self.vocab) if grammar is not None and (
            thought is None or thought.phase != THINK) else None
        answer_grammar = grammar
        # the trigger as the matcher's bytes spell it (a special token's marked spelling)
        trigger = None
        if lazy is not None:
            trigger = lazy[0] if isinstance(lazy[0], bytes) else lazy[0].encode("utf-8")
        seen = bytearray()      # the matcher's bytes of the output so far (for the trigger)
        lazy_grammar = lazy[1] if lazy is not None else None
        # inside a constrained document stop sequences are not honoured: cutting there would
        # break the document the grammar guarantees (docs/generation.md)
        stops = [params.stop] if isinstance(params.stop, str) else list(params.stop or [])
        stream = StopScanner(stops if grammar is None else [])
        want_lp = params.logprobs is not None
        k_top = params.logprobs or 0

        keep = rt.reuse_prefix(prompt_ids)
        pending: List[int] = list(prompt_ids[keep:])
        history: Deque[int] = collections.deque(prompt_ids[-REPEAT_LAST_N:], maxlen=REPEAT_LAST_N)
        n_gen = passes = n_ff = 0

        def finish(reason: str, stop: Optional[bytes] = None, closer: bytes = b"") -> FinishEvent:
            return FinishEvent(reason,
                               stop.decode("utf-8", "replace") if stop is not None else None,
                               closer, len(prompt_ids), n_gen, passes, n_ff, keep)

        def closing(reason: str) -> Iterator[Event]:
            nonlocal matcher
            marker = b""
            if thought is not None and thought.phase != ANSWER:
                if thought.phase == MAYBE and thought.answer_alive:
                    for e in thought.resolve(answer=True):   # the held tokens were the answer
                        stream.add(e)
                else:
                    # the budget ended inside the thought: close it, then the shortest answer
                    for e in thought.resolve(answer=False):
                        stream.add(e)
                    marker = cengine.plain_text(thought.closing_bytes())
                    matcher = answer_grammar.matcher(self.vocab) \
                        if answer_grammar is not None else None
                thought.phase = ANSWER
            yield from stream.release_all()
            closer = cengine.plain_text(matcher.completion()) if matcher is not None else b""
            if closer and recorder is not None:
                recorder.closer(closer)
            if marker:
                yield TokenEvent(-1, marker, None, None, True, closer=True, part="marker")
            if closer:
                yield TokenEvent(-1, closer, None, None, True, closer=True)
            yield finish(reason, closer=marker + closer)

        def answer_starts(forced_ids: List[int]) -> Iterator[Event]:
            """The thought is over (its end marker written or forced): the separator's tokens
            are appended, and the answer's constraint or call trigger starts."""
            assert thought is not None
            nonlocal matcher, n_gen, n_ff
            for t in forced_ids:
                pending.append(t)
                history.append(t)
                n_gen += 1
                n_ff += 1
                stream.add(TokenEvent(t, self.token_bytes(t), None, None, True, part="marker"))
            thought.phase = ANSWER
            matcher = answer_grammar.matcher(self.vocab) if answer_grammar is not None else None
            seen.clear()
            yield from stream.ready()

        while True:
            if cancel is not None and cancel.is_set():
                yield from stream.release_all()
                yield finish("cancelled")
                return
            remaining = None if params.max_tokens is None else params.max_tokens - n_gen
            room = rt.n_ctx - len(rt.tokens) - len(pending)
            if (remaining is not None and remaining <= 0) or room <= 0:
                yield from closing("length")
                return

            if thought is not None and thought.phase == THINK and thought.spent():
                # the thought budget is spent: the end marker is written for the model
                for e in thought.resolve(answer=False):
                    stream.add(e)
                ids, covered = self.tokens_for_bytes(thought.end_b + thought.sep_b)
                if remaining is not None and len(ids) > remaining:
                    yield from closing("length")
                    return
                yield from answer_starts(ids)
                continue

            maybe = thought if thought is not None and thought.phase == MAYBE else None
            if maybe is not None and not maybe.answer_alive:
                # only the thought's start marker can go on
                mask[:] = 0
                maybe.allow_start(mask)
            elif matcher is not None and maybe is not None:
                # the answer, or the start of a thought
                matcher.fill_mask(mask)
                maybe.allow_start(mask)
            elif matcher is not None:
                matcher.fill_mask(mask)
                if not np.any(mask & self._not_eos):
                    if matcher.is_accepting():
                        # complete and nothing may follow: no pass needed to sample the EOS
                        yield from stream.release_all()
                        yield finish("stop")
                        return
                    log.warning("grammar dead end: no token of the vocabulary continues the "
                                "document; closing it")
                    yield from closing("length")
                    return
                if self.fast_forward:
                    limit = room if remaining is None else min(room, remaining)
                    forced = self._fast_forward(matcher, limit)
                    if forced and recorder is not None:
                        recorder.forced(matcher, len(forced),
                                        b"".join(self.token_bytes(t) for t in forced))
                    if forced:
                        for t in forced:
                            b = self.token_bytes(t)
                            pending.append(t)
                            history.append(t)
                            n_gen += 1
                            n_ff += 1
                            stream.add(TokenEvent(t, b, 0.0 if want_lp else None,
                                                  [(b, 0.0)] if want_lp and k_top else
                                                  ([] if want_lp else None), True))
                        yield from stream.ready()
                        continue

            n_rows = recorder.rows_wanted(pending) if recorder is not None else 0
            if n_rows and recorder is not None:
                # a waiting probe reads the decoder's own logits along the value it writes
                at = len(rt.tokens)
                rows, logits = rt.eval_rows(pending, n_rows)
                recorder.decoder_rows(at, rows)
            else:
                logits = rt.eval(pending)
            passes += 1
            pending = []
            in_thought = thought is not None and thought.phase == THINK
            maybe = thought if thought is not None and thought.phase == MAYBE else None
            masked = not in_thought and (matcher is not None or (
                maybe is not None and not maybe.answer_alive))
            # the raw logits, before the mask: a decision's probe reads the model's own mass
            raw = logits.copy() if recorder is not None and matcher is not None and \
                not in_thought else None
            if masked:
                if vsize < logits.shape[0]:
                    logits[vsize:] = -np.inf
                self._apply_mask(logits[:vsize], mask)
            elif in_thought and answer_grammar is not None:
                # an answer must follow: the thought cannot end the generation
                for t in self.stop_ids:
                    logits[t] = -np.inf
            apply_repeat_penalty(logits, history, params.repeat_penalty)
            try:
                tok = sampler.sample(logits)
            except NoTokenAllowed:
                log.warning("no token allowed after masking; closing the document")
                yield from closing("length")
                return
            lp = top = None
            if want_lp:
                lp, top_ids = logprobs_of(logits, tok, k_top)
                top = [(self.token_bytes(t), v) for t, v in top_ids]

            if thought is not None and thought.phase != ANSWER:
                was_thinking = thought.phase == THINK
                routed = self._thought_step(thought, tok, matcher, lp, top)
                if routed is None:
                    # the thought ended the generation (no answer was asked for)
                    for e in thought.resolve(answer=False):
                        stream.add(e)
                    yield from stream.release_all()
                    yield finish("stop")
                    return
                events, answer_now, ended = routed
                if not answer_now:
                    for e in events:
                        stream.add(e)
                    pending = [tok]
                    history.append(tok)
                    n_gen += 1
                    if was_thinking:
                        thought.n_thought += 1      # the start marker is not thought
                    if thought.phase == THINK:
                        matcher = None
                    if ended:
                        ids, _ = self.tokens_for_bytes(thought.sep_b)
                        yield from answer_starts(ids)
                    else:
                        yield from stream.ready()
                    continue
                # the token starts the answer: the held tokens were the answer's (and the
                # trigger's) first bytes; the token itself goes the answer's way below
                for e in events:
                    stream.add(e)
                if events and recorder is not None and matcher is not None:
                    recorder.forced(matcher, len(events), b"".join(e.text for e in events))
                seen += thought.held_bytes
                thought.held_bytes = b""

            if tok in self.stop_ids:
                if matcher is not None and not matcher.accept_token(tok):
                    raise RuntimeError(f"engine fault: the mask allowed end token {tok} "
                                       f"but the matcher refused it")
                yield from stream.release_all()
                yield finish("stop")
                return
            if matcher is not None and not matcher.accept_token(tok):
                raise RuntimeError(f"engine fault: the mask allowed token {tok} but the matcher "
                                   f"refused it")
            text = self.token_bytes(tok)
            if raw is not None and recorder is not None:
                recorder.sampled(matcher, text, raw)
            pending = [tok]
            history.append(tok)
            n_gen += 1
            ev = TokenEvent(tok, text, lp, top, False)

            trig_at = None
            if trigger is not None and matcher is None:
                mbytes = self.matcher_bytes(tok)
                found = self._find_trigger(seen, mbytes, trigger)
                seen += mbytes
                del seen[:-len(trigger)]
                if found is not None:
                    # where the trigger ends in the output text (a marked trigger prints as
                    # its text, two bytes shorter)
                    trig_at = len(stream.out) + len(text) - found[1] - len(
                        cengine.plain_text(trigger))
                    tail_len = found[1]
                    assert lazy_grammar is not None     # a trigger comes with it
                    matcher = lazy_grammar.matcher(self.vocab)
                    tail = mbytes[len(mbytes) - tail_len:] if tail_len else b""
                    if tail and matcher.accept_bytes(tail):
                        if recorder is not None:
                            recorder.forced(matcher, 1, cengine.plain_text(tail))
                    elif tail:
                        # the token ran past the trigger into bytes the grammar refuses: keep
                        # only its head (up to the trigger's end), spelled by other tokens
                        head = mbytes[:len(mbytes) - tail_len]
                        ids, covered = self.tokens_for_bytes(head)
                        if covered == len(head) and ids:
                            pending = ids
                            n_gen += len(ids) - 1
                            history.pop()
                            history.extend(ids)
                            ev = TokenEvent(ids[0] if len(ids) == 1 else -1,
                                            cengine.plain_text(head), lp, top, False)
                        else:
                            log.warning("could not respell the token that completed the trigger")
            hit = stream.add(ev)
            if hit is not None and (trig_at is None or hit[0] < trig_at) and stream.stops:
                yield from stream.cut(hit[0])
                yield finish("stop_sequence", hit[1])
                return
            if trig_at is not None:
                yield from stream.stop_scanning()
            else:
                yield from stream.ready()

    def _thought_step(self, th: "_Thought", tok: int, matcher, lp, top):
        """One sampled token before the answer (phase MAYBE or THINK). -> (events, the token
        starts the answer (it then goes the answer's way), the thought ended with this
        token), or None for an end token inside the thought."""
        mb = self.matcher_bytes(tok)
        if th.phase == THINK:
            if tok in self.stop_ids:
                return None
            ev = TokenEvent(tok, self.token_bytes(tok), lp, top, False, part="thought")
            return th.thought_token(ev, mb)
        rest = th.start_b[th.pos:]
        continues = bool(mb) and rest.startswith(mb)
        overruns = bool(mb) and not continues and mb.startswith(rest)
        answer_ok = th.answer_alive and tok not in self.stop_ids and (
            matcher is None or matcher.accept_token(tok))
        ev = TokenEvent(tok, self.token_bytes(tok), lp, top, False)
        if continues or overruns:
            th.held.append(ev)
            th.held_bytes += mb
            th.pos += len(mb)
            if th.pos >= len(th.start_b):
                # the start marker is whole: a thought, whatever the answer's matcher read
                extra = mb[len(rest):] if overruns else b""
                events = th.resolve(answer=False)
                th.phase = THINK
                if extra:
                    events += th.thought_token(
                        TokenEvent(-1, cengine.plain_text(extra), None, None, False,
                                   part="thought"), extra)[0]
                return events, False, False
            if not answer_ok:
                th.answer_alive = False
            return [], False, False
        if answer_ok or (th.answer_alive and tok in self.stop_ids):
            if matcher is not None and tok not in self.stop_ids:
                matcher.rollback(1)     # the answer's path accepts it again
            th.phase = ANSWER
            return th.resolve(answer=True), True, False
        raise RuntimeError(f"engine fault: token {tok} continues neither the thought's start "
                           f"marker nor the answer")

    @staticmethod
    def _find_trigger(out: bytearray, text: bytes, trigger: bytes) -> Optional[Tuple[int, int]]:
        """Where the trigger first appears once `text` is appended to `out`, if it ends inside
        `text`: (its offset, bytes of `text` after it)."""
        keep = len(trigger) - 1
        base = max(0, len(out) - keep)
        window = bytes(out[base:]) + text
        p = window.find(trigger)
        if p < 0:
            return None
        end = p + len(trigger)
        return base + p, len(window) - end

    def _fast_forward(self, matcher, limit: int) -> List[int]:
        """Append (to the matcher) the tokens of the only legal continuation; return them."""
        if limit <= 0:
            return []
        forced = matcher.forced_bytes()
        if not forced:
            return []
        ids, covered = self.tokens_for_bytes(forced, matcher, limit)
        if ids and covered == len(forced) and not self._complete(matcher):
            # the last token may be one the model would have merged with what comes next
            # (`": "` + `"x` -> `": "x`): let the masked sampler choose it
            matcher.rollback(1)
            ids.pop()
        return ids

    @staticmethod
    def _complete(matcher) -> bool:
        if not matcher.is_accepting():
            return False
        allowed = getattr(matcher, "allowed_bytes", None)
        return allowed is not None and not allowed()

    def close(self) -> None:
        self.runtime.close()


MAYBE, THINK, ANSWER = "maybe", "think", "answer"


class _Thought:
    """Where one generation of a reasoning model is: MAYBE (the prompt did not open a thought:
    the model may start one or answer at once; tokens that could be either are held), THINK
    (inside the thought: free text, held back only where it may be the start of the end
    marker), ANSWER. Markers are in the matcher's bytes (special tokens marked)."""

    def __init__(self, model: Model, plan: ReasoningPlan):
        self.model = model
        self.start_b = model.marked(plan.start)
        self.end_b = model.marked(plan.end)
        self.sep_b = model.marked(plan.separator)
        self.budget = plan.budget
        if plan.opened:
            self.phase = THINK
        elif plan.budget == 0 or not self.start_b:
            self.phase = ANSWER             # thinking is off
        else:
            self.phase = MAYBE
        self.n_thought = 0
        self.pos = 0                        # MAYBE: bytes of the start marker written
        self.answer_alive = True            # MAYBE: the held tokens may also be the answer
        self.held: List[TokenEvent] = []
        self.held_sizes: List[int] = []     # THINK: matcher bytes of each held token
        self.held_bytes = b""

    def spent(self) -> bool:
        return self.budget is not None and self.n_thought >= self.budget

    def allow_start(self, mask: np.ndarray) -> None:
        """Add to the mask the tokens that go on writing the start marker."""
        words = mask.view(np.uint32)
        for t in self.model.prefix_tokens(self.start_b[self.pos:]):
            words[t // 32] |= np.uint32(1 << (t % 32))

    def resolve(self, answer: bool) -> List[TokenEvent]:
        """The held tokens, now known to be the answer's start, thought text, or markers."""
        part = "answer" if answer else ("thought" if self.phase == THINK else "marker")
        out = [TokenEvent(e.token_id, e.text, e.logprob, e.top_logprobs, e.forced, e.closer,
                          part) for e in self.held]
        self.held, self.held_sizes = [], []
        if not answer:
            self.held_bytes = b""
        return out

    def thought_token(self, ev: TokenEvent, mb: bytes):
        """A token inside the thought: (events to emit, False, whether the end marker is now
        complete). Text that may be the start of the end marker waits for the next token."""
        self.held.append(ev)
        self.held_sizes.append(len(mb))
        self.held_bytes += mb
        i = self.held_bytes.find(self.end_b)
        if i >= 0:
            before, marker = self.held_bytes[:i], self.held_bytes[i:]
            events = []
            if before:
                events.append(TokenEvent(-1 if len(self.held) > 1 else ev.token_id,
                                         cengine.plain_text(before), None, None, False,
                                         part="thought"))
            events.append(TokenEvent(-1 if before else ev.token_id, cengine.plain_text(marker),
                                     ev.logprob, ev.top_logprobs, False, part="marker"))
            self.held, self.held_sizes, self.held_bytes = [], [], b""
            return events, False, True
        keep = _suffix_prefix(self.held_bytes, self.end_b)
        out: List[TokenEvent] = []
        while self.held and len(self.held_bytes) - self.held_sizes[0] >= keep:
            out.append(self.held.pop(0))
            self.held_bytes = self.held_bytes[self.held_sizes.pop(0):]
        return out, False, False

    def closing_bytes(self) -> bytes:
        """What closes the thought when the budget runs out inside it (matcher bytes)."""
        if self.phase == MAYBE:
            return self.start_b[self.pos:] + self.end_b + self.sep_b
        return self.end_b + self.sep_b


def _suffix_prefix(data: bytes, marker: bytes) -> int:
    """Length of the longest suffix of data that is a proper prefix of marker."""
    for n in range(min(len(data), len(marker) - 1), 0, -1):
        if data.endswith(marker[:n]):
            return n
    return 0


def _valid_utf8_prefix(data: bytes) -> bytes:
    """The longest prefix of data that is valid UTF-8. llama.cpp's tokenizer aborts the whole
    process (an uncaught C++ `invalid codepoint`) on some invalid sequences, e.g. a 4-byte
    form above U+10FFFF (f4 90 80 80); forced bytes can be any bytes, so the rest is spelled
    by greedy longest matches instead."""
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError as e:
        return data[:e.start]
