"""A thin runtime over llama.cpp's C API (through llama-cpp-python's ctypes bindings).

Why not `llama_cpp.Llama`: it always loads with llama.cpp's "extra buffer types" (weight
repacking), and on machines whose CPU reports AMX but whose kernel or sandbox does not grant
it, the AMX matmul kernel dies with SIGILL on the first decode. Here the extra buffer types
are off unless LLAMAY_EXTRA_BUFTS=1. We also need only a small part of `Llama`: tokenise,
decode a batch, read the last logits, and keep the KV cache of a common prompt prefix.

Sequences: up to `n_parallel` requests decode at once, each in its own KV sequence of one
unified cache (`acquire` / `release`), their forward passes batched together by the stepper
(server/runtime/batching.py). Every call on the context holds one lock; each `Decoder` is
used by one thread at a time.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import itertools
import os
import threading
from typing import Dict, Iterator, List, Optional, Sequence, Tuple


import numpy as np

import llama_cpp.llama_cpp as L

from .batching import Entry, Stepper, Work

_init_lock = threading.Lock()
_initialised = False
_log_callback = None    # kept referenced: llama.cpp calls it from C for the process lifetime


def _init_backend() -> None:
    global _initialised, _log_callback
    with _init_lock:
        if _initialised:
            return
        L.llama_backend_init()
        if os.environ.get("LLAMAY_LLAMA_LOG") != "1":
            # llama.cpp logs every tensor on load to stderr; `llamay run` prints its result there
            _log_callback = L.llama_log_callback(lambda level, text, user_data: None)
            L.llama_log_set(_log_callback, ctypes.c_void_p(0))
        _initialised = True


# Extra KV sequences beside the decoders' (sequences 0..n_parallel-1), for evaluating the
# alternatives of a decision side by side in one batch (server/runtime/decisions.py), a pool
# the running requests share. The cache is unified: the sequences share its cells (a branch
# copied from a decoder adds its id to the cells, no data is copied).
DEFAULT_BRANCHES = 63

# The prompt cache: a decoder keeps what it held when its request ends, and slots in host
# memory keep the KV of earlier requests (saved from a decoder when a request that shares less
# of it arrives, and put back into a decoder when a request continues it), so that an agent
# whose conversation alternates with others' evaluates only its new messages. The slots hold
# no cells: in a unified cache every row of a step attends over every cell up to the highest
# one in use, so KV that no running request needs, kept in the cache, slowed every step
# (1.09-1.23x, docs/benchmarks.md); llama-server keeps its idle slots in host memory for the
# same reason. A new request also moves the idle decoders' content there. Bounded by a count
# of slots and by the tokens they hold together, least recently used dropped first.
DEFAULT_CACHE_SLOTS = 8
# a decoder content shorter than this is not worth a slot
PARK_MIN_TOKENS = 16
# the slots' tokens by default: the cache's cells, at most what this many bytes of host memory
# hold (llama-server's --cache-ram is 8 GiB)
DEFAULT_CACHE_BYTES = 2 << 30


class Parked:
    """A prompt-cache slot: the tokens a decoder held and their KV, saved to host memory by
    llama_state_seq_get_data (put back into a sequence by llama_state_seq_set_data, bit for
    bit)."""
    __slots__ = ("tokens", "state")

    def __init__(self, tokens: List[int], state: "ctypes.Array[ctypes.c_uint8]"):
        self.tokens = tokens
        self.state = state


def _common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = 0
    limit = min(limit, len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def default_threads() -> int:
    # The decode threads spin while they wait for each other: on a busy 2-core machine two
    # threads were 20x slower than one. Half the cores, at least one.
    env = os.environ.get("LLAMAY_THREADS")
    if env:
        return max(1, int(env))
    return max(1, (os.cpu_count() or 2) // 2)



# Parallel sequences when none is asked for: at most this many, and no more than a quarter of
# the machine's memory holds in KV cache at the full context each
MAX_AUTO_PARALLEL = 8
AUTO_PARALLEL_MEMORY_SHARE = 0.25


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def kv_bytes_per_token(model) -> int:
    """F16 K and V of one token over every layer (llama.cpp's default cache type)."""
    n_layer = int(L.llama_model_n_layer(model))
    n_embd = int(L.llama_model_n_embd(model))
    n_head = max(1, int(L.llama_model_n_head(model)))
    n_head_kv = int(L.llama_model_n_head_kv(model)) or n_head
    return 2 * 2 * n_layer * max(1, n_embd * n_head_kv // n_head)


def auto_parallel(kv_per_token: int, n_ctx: int, memory: Optional[int] = None) -> int:
    """`--parallel` by default: as many sequences as a quarter of the memory holds at the full
    context each, between 1 and MAX_AUTO_PARALLEL."""
    memory = _physical_memory() if memory is None else memory
    per_seq = max(1, kv_per_token * n_ctx)
    return max(1, min(MAX_AUTO_PARALLEL, int(memory * AUTO_PARALLEL_MEMORY_SHARE) // per_seq))


class LlamaRuntime:
    """One loaded GGUF model with one context and its unified KV cache: `n_parallel` decoder
    sequences (`Decoder`, one per request in flight, each up to `n_ctx` tokens), a pool of
    `n_branches` short-lived branch sequences for probes, and the prompt-cache slots.

    The single-sequence API of earlier versions (`tokens`, `eval`, `reuse_prefix`, `branches`,
    ...) is decoder 0's, for callers that use the runtime from one thread without `acquire`."""

    def __init__(self, path: str, *, n_ctx: int = 4096, n_threads: Optional[int] = None,
                 n_batch: int = 512, n_branches: int = DEFAULT_BRANCHES,
                 n_threads_batch: Optional[int] = None, n_gpu_layers: int = 0,
                 cache_slots: int = DEFAULT_CACHE_SLOTS, cache_tokens: Optional[int] = None,
                 n_parallel: Optional[int] = 1):
        if not os.path.exists(path):
            raise FileNotFoundError(f"model file not found: {path}")
        _init_backend()
        self.path = str(path)
        mparams = L.llama_model_default_params()
        # layers offloaded to a GPU where llama.cpp was built with one (CUDA, Metal, ...); a
        # CPU-only build keeps every layer on the host whatever is asked
        # (-1: all of them; llama.cpp caps a count past the model's layers)
        mparams.n_gpu_layers = 0x7FFFFFFF if int(n_gpu_layers) < 0 else int(n_gpu_layers)
        self.n_gpu_layers = int(n_gpu_layers)
        self.gpu_offload = bool(L.llama_supports_gpu_offload())
        if hasattr(mparams, "use_extra_bufts"):
            mparams.use_extra_bufts = os.environ.get("LLAMAY_EXTRA_BUFTS") == "1"
        self._model = L.llama_model_load_from_file(self.path.encode("utf-8"), mparams)
        if not self._model:
            raise ValueError(f"llama.cpp could not load the model file {path}")
        self._ctx = None
        self._batch = None
        try:
            self._vocab = L.llama_model_get_vocab(self._model)
            threads = n_threads or default_threads()
            cparams = L.llama_context_default_params()
            train_ctx = int(L.llama_model_n_ctx_train(self._model))
            seq_ctx = max(16, min(int(n_ctx), train_ctx) if train_ctx > 0 else int(n_ctx))
            # a recurrent state is kept per sequence (memory grows with n_seq_max) and cannot
            # drop a partial sequence anyway, which probing needs: one sequence, no branches
            recurrent = any(bool(getattr(L, f, lambda m: False)(self._model))
                            for f in ("llama_model_is_recurrent", "llama_model_is_hybrid"))
            self.kv_bytes_per_token = kv_bytes_per_token(self._model)
            if n_parallel is None:
                n_parallel = auto_parallel(self.kv_bytes_per_token, seq_ctx)
            # llama.cpp reserves an output per sequence, at most n_batch outputs in all, and
            # knows at most 256 sequences
            seq_cap = min(int(n_batch), 256)
            n_par = 1 if recurrent else max(1, min(int(n_parallel), seq_cap // 2))
            n_seq = n_par if recurrent else min(n_par + max(0, int(n_branches)), seq_cap)
            cparams.n_seq_max = n_seq
            # the cells of the unified cache: a full context for every decoder; branches share
            # them (a copied prefix is the same cells)
            cparams.n_ctx = seq_ctx * n_par
            cparams.n_batch = int(n_batch)
            cparams.n_ubatch = int(n_batch)
            if hasattr(cparams, "kv_unified"):
                cparams.kv_unified = True
            cparams.n_threads = threads
            # prompt evaluation: its own thread count (llama-server's --threads-batch); the
            # decode threads' count unless given
            cparams.n_threads_batch = int(n_threads_batch or threads)
            cparams.no_perf = True
            self._ctx = L.llama_init_from_model(self._model, cparams)
            if not self._ctx:
                raise ValueError(f"llama.cpp could not create a context for {path}")
            self._memory = L.llama_get_memory(self._ctx)
            self.n_cells = int(L.llama_n_ctx(self._ctx))
            self.n_ctx = min(seq_ctx, self.n_cells)
            self.n_parallel = n_par
            self.n_batch = int(n_batch)
            self.n_threads = int(L.llama_n_threads(self._ctx))
            self.n_threads_batch = int(L.llama_n_threads_batch(self._ctx))
            total = int(L.llama_n_seq_max(self._ctx))
            self.n_branches = min(n_seq, total) - n_par
            # prompt-cache slots in host memory (a recurrent state is not cut at a prefix: none)
            self.cache_slots = 0 if recurrent else max(0, int(cache_slots))
            self.cache_tokens = (min(self.n_cells, DEFAULT_CACHE_BYTES //
                                     max(1, self.kv_bytes_per_token))
                                 if cache_tokens is None else max(0, int(cache_tokens)))
            # the slots, least recently used first, by a key of their own
            self._slots: "collections.OrderedDict[int, Parked]" = collections.OrderedDict()
            self._slot_keys = itertools.count()
            self._batch = L.llama_batch_init(self.n_batch, 0, max(1, n_seq))
            self.n_vocab = int(L.llama_vocab_n_tokens(self._vocab))
            self.metadata = self._read_metadata()
        except BaseException:
            self.close()
            raise
        self.bos_id = int(L.llama_vocab_bos(self._vocab))
        self.eos_id = int(L.llama_vocab_eos(self._vocab))
        self.eog_ids = frozenset(i for i in range(self.n_vocab)
                                 if L.llama_vocab_is_eog(self._vocab, i))
        # every call on the context or its memory holds it (re-entrant: a decode that finds no
        # free cell drops slots from inside)
        self._lock = threading.RLock()
        self._stepper = Stepper(self._decode_entries, self.n_batch)
        self._decoders = [Decoder(self, i) for i in range(self.n_parallel)]
        self._free_branches: List[int] = list(range(self.n_parallel + self.n_branches - 1,
                                                    self.n_parallel - 1, -1))
        # decoders no request holds, their content kept for the next (least recently used first)
        self._idle: List[Decoder] = list(self._decoders)
        self._idle_cv = threading.Condition()
        self._tick = 0

    # --- model facts ------------------------------------------------------------------------------
    def _read_metadata(self) -> Dict[str, str]:
        out: Dict[str, str] = {}
        size = 1024
        buf = ctypes.create_string_buffer(size)
        for i in range(int(L.llama_model_meta_count(self._model))):
            n = L.llama_model_meta_key_by_index(self._model, i, buf, size)
            if n < 0:
                continue
            key = buf.value.decode("utf-8", "replace")
            n = L.llama_model_meta_val_str_by_index(self._model, i, buf, size)
            if n >= size:     # chat templates run to tens of kilobytes: grow and read again
                size = n + 1
                buf = ctypes.create_string_buffer(size)
                n = L.llama_model_meta_val_str_by_index(self._model, i, buf, size)
            if n < 0:
                continue
            out[key] = buf.value.decode("utf-8", "replace")
        return out

    def token_text(self, token_id: int) -> str:
        """The vocabulary entry as text (e.g. '<|im_end|>'), for chat template variables."""
        if token_id < 0 or token_id >= self.n_vocab:
            return ""
        return L.llama_vocab_get_text(self._vocab, token_id).decode("utf-8", "replace")

    def add_bos(self) -> bool:
        return bool(L.llama_vocab_get_add_bos(self._vocab))

    # --- text <-> tokens (the vocabulary only: no lock) ---------------------------------------
    def tokenize(self, data: bytes, *, add_special: bool, parse_special: bool) -> List[int]:
        """llama.cpp's tokenisation of UTF-8 text. Invalid UTF-8 is refused with ValueError:
        on some invalid sequences llama.cpp throws a C++ exception that aborts the process."""
        data.decode("utf-8")        # UnicodeDecodeError is a ValueError
        cap = len(data) + 8
        while True:
            arr = (L.llama_token * cap)()
            n = L.llama_tokenize(self._vocab, data, len(data), arr, cap, add_special, parse_special)
            if n >= 0:
                return list(arr[:n])
            cap = -n

    def token_to_piece(self, token_id: int, *, special: bool = False) -> bytes:
        buf = ctypes.create_string_buffer(256)      # per call: threads share the runtime
        n = L.llama_token_to_piece(self._vocab, token_id, buf, 256, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = L.llama_token_to_piece(self._vocab, token_id, buf, -n, 0, special)
        return buf.raw[:n]

    def detokenize(self, ids: Sequence[int], *, special: bool = False) -> bytes:
        if not ids:
            return b""
        arr = (L.llama_token * len(ids))(*ids)
        cap = max(64, 8 * len(ids))
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = L.llama_detokenize(self._vocab, arr, len(ids), buf, cap, False, special)
            if n >= 0:
                return buf.raw[:n]
            cap = -n

    # --- decoders ---------------------------------------------------------------------------------
    def acquire(self, prompt: Sequence[int] = ()) -> "Decoder":
        """A decoder for one request (waits while all are held): the idle one whose content
        shares the longest prefix with `prompt` (at least PARK_MIN_TOKENS), else an empty one,
        else the least recently used. Give it back with `release`. A thread holds one decoder
        at a time: a held decoder counts as busy until it submits its tokens, and every step
        waits for it."""
        with self._idle_cv:
            while not self._idle:
                self._idle_cv.wait()
            limit = max(0, len(prompt) - 1)
            # (a prefix is copied in from wherever it is: the choice only says whose content
            # the request overwrites). A few template tokens in common do not count: then an
            # empty decoder, else the least recently used, so that the content most likely to
            # be asked for again stays where it is

            def worth(d: "Decoder") -> Tuple[int, bool, int]:
                k = _common_prefix(d.tokens, prompt, limit)
                return (k if k >= PARK_MIN_TOKENS else 0, not d.tokens, -d.used)
            dec = max(self._idle, key=worth)
            self._idle.remove(dec)
        self._stepper.join()
        return dec

    def release(self, dec: "Decoder") -> None:
        """The request is over: its decoder keeps its content for the next one."""
        dec.close_branches()
        self._stepper.leave()
        with self._idle_cv:
            self._tick += 1
            dec.used = self._tick
            self._idle.append(dec)
            self._idle_cv.notify()

    def in_use(self) -> int:
        with self._idle_cv:
            return self.n_parallel - len(self._idle)

    def step_counts(self) -> Dict[str, int]:
        """What the stepper ran: steps, llama_decode calls, the entries (tokens) they evaluated,
        the works they carried (the batching benchmark's sequences a call) and the
        milliseconds spent inside llama_decode."""
        st = self._stepper
        with st.cv:
            return {"steps": st.steps, "calls": st.calls, "entries": st.entries,
                    "works": st.batched, "decode_ms": int(1000 * st.decode_s)}

    # --- the prompt cache -------------------------------------------------------------------------
    def cached_prompts(self) -> List[int]:
        """How many tokens each prompt-cache slot holds, least recently used first."""
        with self._lock:
            return [len(p.tokens) for p in self._slots.values()]

    def _park(self, src: int, held: List[int], keep: Optional[int] = None) -> bool:
        """Keep what sequence `src` holds (`held`, all of it) in a slot: slots it extends are
        replaced; within the bounds, least recently used slots go first (never `keep`, the
        slot about to be read). Whether a slot holds it now."""
        if self.cache_slots == 0 or len(held) < PARK_MIN_TOKENS:
            return False
        kept = len(self._slots[keep].tokens) if keep is not None else 0
        if len(held) + kept > self.cache_tokens or (keep is not None and self.cache_slots < 2):
            return False
        for key, other in list(self._slots.items()):
            k = _common_prefix(other.tokens, held, len(held))
            if k == len(held):              # a slot holds all of it already
                self._slots.move_to_end(key)
                return True
            if k == len(other.tokens) and key != keep:  # superseded: `held` has all of it
                del self._slots[key]
        state = self._save(src)
        if state is None:
            return False
        while len(self._slots) >= self.cache_slots or \
                sum(len(p.tokens) for p in self._slots.values()) + len(held) > self.cache_tokens:
            del self._slots[next(k for k in self._slots if k != keep)]
        self._slots[next(self._slot_keys)] = Parked(list(held), state)
        return True

    def _save(self, seq: int) -> "Optional[ctypes.Array[ctypes.c_uint8]]":
        """Sequence `seq`'s KV, copied to host memory (None if llama.cpp could not)."""
        size = int(L.llama_state_seq_get_size(self._ctx, seq))
        if size <= 0:
            return None
        buf = (ctypes.c_uint8 * size)()
        if int(L.llama_state_seq_get_data(self._ctx, buf, size, seq)) != size:
            return None
        return buf

    def _restore(self, parked: Parked, seq: int) -> bool:
        """Put a slot's KV into sequence `seq` (emptied first), dropping idle decoders'
        content while there are no cells for it. False when it did not fit."""
        while True:
            state = parked.state
            if L.llama_state_seq_set_data(self._ctx, state, len(state), seq) == len(state):
                return True
            L.llama_memory_seq_rm(self._memory, seq, -1, -1)
            if not self._evict_one():
                return False

    def _park_idle(self, keep: "Decoder") -> None:
        """A request starts: the idle decoders' content goes to slots and leaves the cache
        (it would cost every step of the running requests), the way llama-server saves its
        idle slots; what no slot takes (a short content, no slots at all) stays."""
        with self._idle_cv:
            for d in self._idle:
                if d.tokens and d is not keep and self._park(d.id, d.tokens):
                    L.llama_memory_seq_rm(self._memory, d.id, -1, -1)
                    d.tokens = []

    def _evict_one(self, busy: "frozenset[int]" = frozenset()) -> bool:
        """Free cells for a decode: the content of the least recently used idle decoder
        (kept in a slot), never one of the sequences `busy` (the batch's) nor one with open
        branches (decoder 0 counts as idle to the single-sequence API while it decodes).
        False when nothing is left to drop."""
        with self._idle_cv:
            held = [d for d in self._idle if d.tokens and d.id not in busy and not d._branches]
            if not held:
                return False
            dec = min(held, key=lambda d: d.used)
            self._park(dec.id, dec.tokens)
            L.llama_memory_seq_rm(self._memory, dec.id, -1, -1)
            dec.tokens = []
            return True

    # --- evaluation -------------------------------------------------------------------------------
    def _decode_batch(self, b) -> int:
        """llama_decode, moving idle decoders' content out of the cache (oldest first) while
        it has no cells for the batch (llama.cpp answers 1 then, having evaluated nothing)."""
        busy: Optional[frozenset] = None
        while True:
            rc = L.llama_decode(self._ctx, b)
            if rc != 1:
                return rc
            if busy is None:
                busy = frozenset(b.seq_id[i][j] for i in range(b.n_tokens)
                                 for j in range(b.n_seq_id[i]))
            if not self._evict_one(busy):
                return rc

    def _decode_entries(self, entries: List[Entry]) -> List[np.ndarray]:
        """One llama_decode of at most n_batch entries (the stepper's batch); fresh float32
        copies of the logits after each wanted entry, in order."""
        with self._lock:
            b = self._batch
            if b is None:
                raise RuntimeError("the model is closed")
            b.n_tokens = len(entries)
            for i, (t, pos, seqs, want) in enumerate(entries):
                b.token[i] = int(t)
                b.pos[i] = pos
                b.n_seq_id[i] = len(seqs)
                for j, s in enumerate(seqs):
                    b.seq_id[i][j] = s
                b.logits[i] = 1 if want else 0
            rc = self._decode_batch(b)
            if rc != 0:
                raise RuntimeError(f"llama_decode failed with code {rc}")
            rows = []
            for i, e in enumerate(entries):
                if e[3]:
                    ptr = L.llama_get_logits_ith(self._ctx, i)
                    rows.append(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy())
            return rows

    # --- decoder 0, for single-threaded callers -------------------------------------------------
    @property
    def tokens(self) -> List[int]:
        return self._decoders[0].tokens

    @tokens.setter
    def tokens(self, value: List[int]) -> None:
        self._decoders[0].tokens = value

    def reuse_prefix(self, prompt: Sequence[int]) -> int:
        return self._decoders[0].reuse_prefix(prompt)

    def truncate(self, n: int) -> None:
        self._decoders[0].truncate(n)

    def eval(self, ids: Sequence[int]) -> np.ndarray:
        return self._decoders[0].eval(ids)

    def eval_rows(self, ids: Sequence[int], n_rows: int) -> Tuple[List[np.ndarray], np.ndarray]:
        return self._decoders[0].eval_rows(ids, n_rows)

    def branches(self, n: int):
        return self._decoders[0].branches(n)

    def fork(self, seq: int, length: int) -> None:
        self._decoders[0].fork(seq, length)

    def eval_branches(self, items):
        return self._decoders[0].eval_branches(items)

    def close(self) -> None:
        if getattr(self, "_batch", None) is not None:
            L.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "_ctx", None):
            L.llama_free(self._ctx)
            self._ctx = None
        if getattr(self, "_model", None):
            L.llama_model_free(self._model)
            self._model = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Decoder:
    """One decoder sequence of the unified cache: what one request evaluates (`tokens`, the
    cache's content in order, up to the runtime's `n_ctx`), its prompt-cache placement and its
    probes' branches. Used by one thread at a time; its evaluations go through the stepper, in
    one batch with the other decoders'."""

    def __init__(self, rt: LlamaRuntime, seq_id: int):
        self.rt = rt
        self.id = seq_id
        self.tokens: List[int] = []
        self.used = 0                           # when its last request ended (LRU)
        self._branches: List[int] = []          # branch sequence ids it holds
        self._branch_len: Dict[int, int] = {}   # forked branch sequence -> its length

    @property
    def n_ctx(self) -> int:
        return self.rt.n_ctx

    @property
    def n_branches(self) -> int:
        return self.rt.n_branches

    # --- the prompt cache -------------------------------------------------------------------------
    def reuse_prefix(self, prompt: Sequence[int]) -> int:
        """Keep the KV cache of the longest common prefix with `prompt`, at most len-1 tokens
        (the last prompt token must be evaluated again to get its logits), taken from this
        decoder, another decoder (in use or idle: a copied prefix shares its cells) or the
        prompt-cache slot that shares the most with it (put back from host memory). What this
        decoder held is parked in a slot first when it would lose a part worth keeping, and so
        is what idle decoders hold. Returns the prefix's length. A prefix is only ever the same
        tokens at the same positions, so a changed earlier message invalidates from that
        point."""
        rt = self.rt
        with rt._lock:
            got = self._take_prefix(prompt)
            rt._park_idle(self)
            return got

    def _take_prefix(self, prompt: Sequence[int]) -> int:
        rt = self.rt
        mem = rt._memory
        limit = len(prompt) - 1
        own = _common_prefix(self.tokens, prompt, limit)
        best_src: Optional[int] = None
        best, best_tokens = own, self.tokens
        for other in rt._decoders:
            if other is not self:
                k = _common_prefix(other.tokens, prompt, limit)
                if k > best:
                    best_src, best, best_tokens = other.id, k, other.tokens
        slot: Optional[int] = None
        for key, parked in rt._slots.items():
            k = _common_prefix(parked.tokens, prompt, limit)
            if k > best:
                best, best_tokens, slot = k, parked.tokens, key
        if best_src is None and slot is None:
            if len(self.tokens) - own >= PARK_MIN_TOKENS:
                rt._park(self.id, self.tokens)
            self.truncate(own)
            return own
        if len(self.tokens) - own >= PARK_MIN_TOKENS:
            rt._park(self.id, self.tokens, keep=slot)
        if not L.llama_memory_seq_rm(mem, self.id, -1, -1):
            raise RuntimeError("llama.cpp could not empty the decoder's sequence")
        self.tokens = []
        if slot is None:
            L.llama_memory_seq_cp(mem, best_src, self.id, 0, best)
            self.tokens = list(best_tokens[:best])
            return best
        parked = rt._slots[slot]
        if not rt._restore(parked, self.id):
            return 0
        if slot in rt._slots:           # (making room may have dropped it)
            rt._slots.move_to_end(slot)
        self.tokens = list(parked.tokens)
        self.truncate(best)
        return best

    def truncate(self, n: int) -> None:
        rt = self.rt
        with rt._lock:
            if n < len(self.tokens):
                if not L.llama_memory_seq_rm(rt._memory, self.id, n, -1):
                    # a cache that cannot drop a partial sequence (one decoder then): start over
                    L.llama_memory_clear(rt._memory, True)
                    rt._slots.clear()
                    n = 0
                del self.tokens[n:]

    # --- evaluation -------------------------------------------------------------------------------
    def eval(self, ids: Sequence[int]) -> np.ndarray:
        """Decode `ids` after what the sequence holds and return a fresh float32 copy of the
        logits after the last one."""
        return self._decode(ids, 0)[1]

    def eval_rows(self, ids: Sequence[int], n_rows: int) -> Tuple[List[np.ndarray], np.ndarray]:
        """Like eval, and also the logits after each of the first n_rows of `ids` (the
        decoder keeps them for a decision whose probe waits for them): (those rows, a
        separate copy of the last row). The last row's values are eval's: asking for more
        outputs changes no token's logits."""
        return self._decode(ids, n_rows)

    def _decode(self, ids: Sequence[int], n_rows: int) -> Tuple[List[np.ndarray], np.ndarray]:
        if not ids:
            raise ValueError("nothing to evaluate")
        ids = [int(t) for t in ids]
        pos0 = len(self.tokens)
        if pos0 + len(ids) > self.rt.n_ctx:
            raise ValueError(f"{pos0 + len(ids)} tokens do not fit the context of "
                             f"{self.rt.n_ctx}")
        last = len(ids) - 1
        seqs: Sequence[int] = (self.id,)
        entries: List[Entry] = [(t, pos0 + i, seqs, i < n_rows or i == last)
                                for i, t in enumerate(ids)]

        def extend(a: int, b: int) -> None:
            self.tokens.extend(ids[a:b])

        def take_back(exc: BaseException) -> None:
            # the failed batch may have left part of itself in the cache
            self.truncate(pos0)

        rows = self.rt._stepper.run(Work(entries, extend, take_back)).rows
        if last < n_rows:
            return rows, rows[-1].copy()
        return rows[:-1], rows[-1]

    # --- branches ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def branches(self, n: int) -> Iterator[List[int]]:
        """n sequence ids for branches from the runtime's pool (waiting while other requests'
        probes hold them), each started with fork() and extended with eval_branches. On exit
        they are removed with every cell only they hold and go back to the pool; the
        decoder's sequence is untouched."""
        rt = self.rt
        if n > rt.n_branches:
            raise ValueError(f"{n} branches asked for; the context has {rt.n_branches}")
        if self._branches:
            raise RuntimeError("branches are open already")

        def take() -> bool:
            if len(rt._free_branches) < n:
                return False
            self._branches = [rt._free_branches.pop() for _ in range(n)]
            return True

        rt._stepper.wait_for(take)
        try:
            yield list(self._branches)
        finally:
            self.close_branches()

    def close_branches(self) -> None:
        rt = self.rt
        if not self._branches:
            return
        with rt._lock:
            for s in self._branches:
                L.llama_memory_seq_rm(rt._memory, s, -1, -1)
        with rt._stepper.cv:
            rt._free_branches.extend(reversed(self._branches))
            self._branches = []
            self._branch_len.clear()
            rt._stepper.cv.notify_all()

    def fork(self, seq: int, length: int) -> None:
        """Start branch `seq` as this decoder's first `length` positions (sharing their cells,
        nothing is copied)."""
        if seq not in self._branches or seq in self._branch_len \
                or not 0 < length <= len(self.tokens):
            raise ValueError(f"cannot fork branch {seq} at {length}")
        with self.rt._lock:
            L.llama_memory_seq_cp(self.rt._memory, self.id, seq, 0, length)
        self._branch_len[seq] = length

    def eval_branches(self, items: Sequence[Tuple[Sequence[int], Sequence[int], bool]]
                      ) -> List[List[np.ndarray]]:
        """Evaluate every item (seq_ids, ids, every) in one batch (more if they exceed
        n_batch): `ids` go after what the branches `seq_ids` hold (they must be equally long;
        a token in several branches is one cell, seen by each), and the item's result is the
        logits after each of its ids (every) or after its last, fresh float32 copies."""
        entries: List[Entry] = []
        owner: List[int] = []
        for k, (seqs, ids, every) in enumerate(items):
            if not ids or not seqs:
                raise ValueError("nothing to evaluate")
            pos0 = self._branch_len[seqs[0]]
            if any(self._branch_len[s] != pos0 for s in seqs):
                raise ValueError("the branches of one item must be equally long")
            if pos0 + len(ids) > self.rt.n_ctx:
                raise ValueError(f"{pos0 + len(ids)} tokens do not fit the context of "
                                 f"{self.rt.n_ctx}")
            seqs = tuple(seqs)
            for j, t in enumerate(ids):
                want = every or j == len(ids) - 1
                entries.append((int(t), pos0 + j, seqs, want))
                if want:
                    owner.append(k)

        def grow(a: int, b: int) -> None:
            for _, pos, seqs, _ in entries[a:b]:
                for s in seqs:
                    self._branch_len[s] = pos + 1

        # what a failed batch left in the cache is on the branches: removed on exit
        rows = self.rt._stepper.run(Work(entries, grow)).rows
        out: List[List[np.ndarray]] = [[] for _ in items]
        for k, row in zip(owner, rows):
            out[k].append(row)
        return out
