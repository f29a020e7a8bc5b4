"""A thin runtime over llama.cpp's C API (through llama-cpp-python's ctypes bindings).

Why not `llama_cpp.Llama`: it always loads with llama.cpp's "extra buffer types" (weight
repacking), and on machines whose CPU reports AMX but whose kernel or sandbox does not grant
it, the AMX matmul kernel dies with SIGILL on the first decode. Here the extra buffer types
are off unless LLAMAY_EXTRA_BUFTS=1. We also need only a small part of `Llama`: tokenise,
decode a batch, read the last logits, and keep the KV cache of a common prompt prefix.

Not thread-safe: one runtime is used by one thread at a time (the server queues requests).
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import threading
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

import llama_cpp.llama_cpp as L

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


# Extra KV sequences beside the decoder's (sequence 0), for evaluating the alternatives of a
# decision side by side in one batch (server/runtime/decisions.py). The cache is unified: the
# sequences share its n_ctx cells (a branch copied from sequence 0 adds its id to the cells, no
# data is copied), so neither the cache's size nor the decoder's context changes.
DEFAULT_BRANCHES = 63

# The prompt cache: sequences after the branches keep the KV of earlier requests (parked from
# sequence 0 when a request that shares less of it arrives, sharing its cells), so that an
# agent whose conversation alternates with others' evaluates only its new messages. Bounded
# by a count of slots and by the tokens they hold together, least recently used dropped first;
# a decode that finds no free cell drops them too, oldest first, before it fails.
DEFAULT_CACHE_SLOTS = 8
# a decoder content shorter than this is not worth a slot
PARK_MIN_TOKENS = 16


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


class LlamaRuntime:
    """One loaded GGUF model with one context and its KV cache: the decoder's sequence
    (`tokens`), and up to `n_branches` short-lived branch sequences (`branches`)."""

    def __init__(self, path: str, *, n_ctx: int = 4096, n_threads: Optional[int] = None,
                 n_batch: int = 512, n_branches: int = DEFAULT_BRANCHES,
                 n_threads_batch: Optional[int] = None, n_gpu_layers: int = 0,
                 cache_slots: int = DEFAULT_CACHE_SLOTS, cache_tokens: Optional[int] = None):
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
            cparams.n_ctx = max(16, min(int(n_ctx), train_ctx) if train_ctx > 0 else int(n_ctx))
            cparams.n_batch = int(n_batch)
            cparams.n_ubatch = int(n_batch)
            # a recurrent state is kept per sequence (memory grows with n_seq_max) and cannot
            # drop a partial sequence anyway, which probing needs: no branches there
            recurrent = any(bool(getattr(L, f, lambda m: False)(self._model))
                            for f in ("llama_model_is_recurrent", "llama_model_is_hybrid"))
            # llama.cpp reserves an output per sequence, at most n_batch outputs in all
            n_seq = 1 if recurrent else min(1 + max(0, int(n_branches)), int(n_batch))
            # (the slots share that bound with the branches, which come first)
            slots = 0 if recurrent else max(0, min(int(cache_slots), int(n_batch) - n_seq))
            cparams.n_seq_max = n_seq + slots
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
            self.n_ctx = int(L.llama_n_ctx(self._ctx))
            self.n_batch = int(n_batch)
            self.n_threads = int(L.llama_n_threads(self._ctx))
            self.n_threads_batch = int(L.llama_n_threads_batch(self._ctx))
            total = int(L.llama_n_seq_max(self._ctx))
            self.n_branches = min(n_seq, total) - 1
            # prompt-cache slots: sequence ids after the branches, and what each holds (least
            # recently used first)
            self.cache_slots = max(0, total - n_seq)
            self.cache_tokens = self.n_ctx if cache_tokens is None else max(0, int(cache_tokens))
            self._free_slots: List[int] = list(range(n_seq, n_seq + self.cache_slots))
            self._slots: "collections.OrderedDict[int, List[int]]" = collections.OrderedDict()
            self._batch = L.llama_batch_init(self.n_batch, 0, n_seq)
            self.n_vocab = int(L.llama_vocab_n_tokens(self._vocab))
            self.metadata = self._read_metadata()
        except BaseException:
            self.close()
            raise
        self.bos_id = int(L.llama_vocab_bos(self._vocab))
        self.eos_id = int(L.llama_vocab_eos(self._vocab))
        self.eog_ids = frozenset(i for i in range(self.n_vocab)
                                 if L.llama_vocab_is_eog(self._vocab, i))
        self.tokens: List[int] = []     # what the KV cache holds, in order
        self._branch_len: Dict[int, int] = {}   # forked branch sequence -> its length
        self._branches_open = False
        self._piece_buf = ctypes.create_string_buffer(256)

    # --- model facts ---------------------------------------------------------------------
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

    # --- text <-> tokens -----------------------------------------------------------------
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
        n = L.llama_token_to_piece(self._vocab, token_id, self._piece_buf, 256, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = L.llama_token_to_piece(self._vocab, token_id, buf, -n, 0, special)
            return buf.raw[:n]
        return self._piece_buf.raw[:n]

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

    # --- evaluation ------------------------------------------------------------------------
    def reuse_prefix(self, prompt: Sequence[int]) -> int:
        """Keep the KV cache of the longest common prefix with `prompt`, at most len-1 tokens
        (the last prompt token must be evaluated again to get its logits), taken from the
        decoder's sequence or from the prompt-cache slot that shares the most with it. What
        the decoder held is parked in a slot first when it would lose a part worth keeping.
        Returns the prefix's length. A prefix is only ever the same tokens at the same
        positions, so a changed earlier message invalidates from that point."""
        limit = len(prompt) - 1
        own = _common_prefix(self.tokens, prompt, limit)
        best_seq, best = None, own
        for seq, held in self._slots.items():
            k = _common_prefix(held, prompt, limit)
            if k > best:
                best_seq, best = seq, k
        if best_seq is None:
            if len(self.tokens) - own >= PARK_MIN_TOKENS:
                self._park()
            self.truncate(own)
            return own
        self._park(keep=best_seq)
        if not L.llama_memory_seq_rm(self._memory, 0, -1, -1):
            raise RuntimeError("llama.cpp could not empty the decoder's sequence")
        L.llama_memory_seq_cp(self._memory, best_seq, 0, 0, best)
        self.tokens = list(self._slots[best_seq][:best])
        self._slots.move_to_end(best_seq)
        return best

    def cached_prompts(self) -> List[int]:
        """How many tokens each prompt-cache slot holds, least recently used first."""
        return [len(t) for t in self._slots.values()]

    def _park(self, keep: Optional[int] = None) -> None:
        """Keep what the decoder holds in a slot (its cells shared, nothing copied): slots it
        extends are replaced; within the bounds, least recently used slots go first (never
        `keep`, the slot about to be read)."""
        held = self.tokens
        if self.cache_slots == 0 or len(held) < PARK_MIN_TOKENS:
            return
        kept = len(self._slots[keep]) if keep is not None else 0
        if len(held) + kept > self.cache_tokens or (keep is not None and self.cache_slots < 2):
            return
        for seq, other in list(self._slots.items()):
            k = _common_prefix(other, held, len(held))
            if k == len(held):              # a slot holds all of it already
                self._slots.move_to_end(seq)
                return
            if k == len(other) and seq != keep:     # superseded: the decoder holds all of it
                self._drop_slot(seq)
        while not self._free_slots or sum(map(len, self._slots.values())) + len(held) \
                > self.cache_tokens:
            self._drop_slot(next(s for s in self._slots if s != keep))
        seq = self._free_slots.pop()
        L.llama_memory_seq_cp(self._memory, 0, seq, 0, len(held))
        self._slots[seq] = list(held)

    def _drop_slot(self, seq: int) -> None:
        L.llama_memory_seq_rm(self._memory, seq, -1, -1)
        del self._slots[seq]
        self._free_slots.append(seq)

    def _decode_batch(self, b) -> int:
        """llama_decode, dropping prompt-cache slots (oldest first) while the cache has no
        cells for the batch (llama.cpp answers 1 then, having evaluated nothing)."""
        while True:
            rc = L.llama_decode(self._ctx, b)
            if rc != 1 or not self._slots:
                return rc
            self._drop_slot(next(iter(self._slots)))

    def truncate(self, n: int) -> None:
        if n < len(self.tokens):
            if not L.llama_memory_seq_rm(self._memory, 0, n, -1):
                # a cache that cannot drop a partial sequence: start over
                L.llama_memory_clear(self._memory, True)
                self._free_slots.extend(self._slots)
                self._slots.clear()
                n = 0
            del self.tokens[n:]

    def eval(self, ids: Sequence[int]) -> np.ndarray:
        """Decode `ids` after what the cache holds (in batches of n_batch) and return a fresh
        float32 copy of the logits after the last one."""
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
        if len(self.tokens) + len(ids) > self.n_ctx:
            raise ValueError(f"{len(self.tokens) + len(ids)} tokens do not fit the context of "
                             f"{self.n_ctx}")
        b = self._batch
        assert b is not None, "the model is closed"
        rows = []
        for start in range(0, len(ids), self.n_batch):
            chunk = ids[start:start + self.n_batch]
            pos0 = len(self.tokens)
            b.n_tokens = len(chunk)
            for i, t in enumerate(chunk):
                b.token[i] = int(t)
                b.pos[i] = pos0 + i
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = 0
                b.logits[i] = 1 if start + i < n_rows else 0
            b.logits[len(chunk) - 1] = 1
            rc = self._decode_batch(b)
            if rc != 0:
                # the failed batch may have left part of itself in the cache
                self.truncate(pos0)
                raise RuntimeError(f"llama_decode failed with code {rc}")
            self.tokens.extend(int(t) for t in chunk)
            for i in range(min(len(chunk), n_rows - start)):
                ptr = L.llama_get_logits_ith(self._ctx, i)
                rows.append(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy())
        ptr = L.llama_get_logits_ith(self._ctx, -1)
        return rows, np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()

    # --- branches ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def branches(self, n: int) -> Iterator[List[int]]:
        """n sequence ids for branches, each started with fork() and extended with
        eval_branches. On exit they are removed with every cell only they hold; the decoder's
        sequence is untouched."""
        if n > self.n_branches:
            raise ValueError(f"{n} branches asked for; the context has {self.n_branches}")
        if self._branches_open:
            raise RuntimeError("branches are open already")
        seqs = list(range(1, n + 1))
        self._branches_open = True
        try:
            yield seqs
        finally:
            for s in seqs:
                L.llama_memory_seq_rm(self._memory, s, -1, -1)
            self._branch_len.clear()
            self._branches_open = False

    def fork(self, seq: int, length: int) -> None:
        """Start branch `seq` as the decoder's first `length` positions (sharing their cells,
        nothing is copied)."""
        if not self._branches_open or seq in self._branch_len or not 0 < length <= len(self.tokens):
            raise ValueError(f"cannot fork branch {seq} at {length}")
        L.llama_memory_seq_cp(self._memory, 0, seq, 0, length)
        self._branch_len[seq] = length

    def eval_branches(self, items: Sequence[Tuple[Sequence[int], Sequence[int], bool]]
                      ) -> List[List[np.ndarray]]:
        """Evaluate every item (seq_ids, ids, every) in one batch (more if they exceed
        n_batch): `ids` go after what the branches `seq_ids` hold (they must be equally long;
        a token in several branches is one cell, seen by each), and the item's result is the
        logits after each of its ids (every) or after its last, fresh float32 copies."""
        flat = []       # (token, position, seq ids, wants logits, item)
        for k, (seqs, ids, every) in enumerate(items):
            if not ids or not seqs:
                raise ValueError("nothing to evaluate")
            pos0 = self._branch_len[seqs[0]]
            if any(self._branch_len[s] != pos0 for s in seqs):
                raise ValueError("the branches of one item must be equally long")
            if pos0 + len(ids) > self.n_ctx:
                raise ValueError(f"{pos0 + len(ids)} tokens do not fit the context of "
                                 f"{self.n_ctx}")
            for j, t in enumerate(ids):
                flat.append((int(t), pos0 + j, seqs, every or j == len(ids) - 1, k))
        rows: List[List[np.ndarray]] = [[] for _ in items]
        b = self._batch
        assert b is not None, "the model is closed"
        for start in range(0, len(flat), self.n_batch):
            chunk = flat[start:start + self.n_batch]
            b.n_tokens = len(chunk)
            for i, (t, pos, seqs, want, _) in enumerate(chunk):
                b.token[i] = t
                b.pos[i] = pos
                b.n_seq_id[i] = len(seqs)
                for j, s in enumerate(seqs):
                    b.seq_id[i][j] = s
                b.logits[i] = 1 if want else 0
            rc = self._decode_batch(b)
            if rc != 0:     # what it left in the cache is on the branches: removed on exit
                raise RuntimeError(f"llama_decode failed with code {rc}")
            for _, pos, seqs, _, _ in chunk:
                for s in seqs:
                    self._branch_len[s] = pos + 1
            for i, (_, _, _, want, k) in enumerate(chunk):
                if want:
                    ptr = L.llama_get_logits_ith(self._ctx, i)
                    rows[k].append(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy())
        return rows

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
