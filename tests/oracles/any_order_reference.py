"""The IR form of property_order="any" objects, as cengine's schema compiler made it before
the builder made their states directly (a test oracle).

One IR rule per state `sep (member_j state_{s|j} | ...) | EMPTY`, built by the ordinary
pipeline (inlining, Thompson construction, subset construction): slow for large objects,
obvious, and the language ir.AnyOrder must keep. `object_expr_any_order` is the compiler
method of that time, verbatim but for its name and the module it reads its limits from;
`reference_objects()` puts it in place of the compiler's."""
from __future__ import annotations

import contextlib
from typing import Dict, Optional, Tuple

from cengine import ir
from cengine.errors import CompileError, LimitError
from cengine.schema import objects
from cengine.schema import json_grammar as jg
from cengine.schema.drafts import pointer as _ptr


@contextlib.contextmanager
def reference_objects():
    """Schemas compiled inside the block make their any-order objects the old way."""
    method = objects.Objects._object_expr_any_order
    objects.Objects._object_expr_any_order = _with_key_rules
    try:
        yield
    finally:
        objects.Objects._object_expr_any_order = method


def _with_key_rules(self, ptr: str, present, extras, lo: int, hi: Optional[int]) -> ir.Expr:
    # free extra keys come as a jg.FreeKeys now (the compiler makes their rule only where it
    # is called): the method of that time takes them as the rule string_not_in makes
    extras = [(jg.free_key_rule(self.g, k) if type(k) is jg.FreeKeys else k, v)
              for k, v in extras]
    return object_expr_any_order(self, ptr, present, extras, lo, hi)


def object_expr_any_order(self, ptr: str, present, extras, lo: int,
                          hi: Optional[int]) -> ir.Expr:
    """The object rule under property_order="any": members in every order, each declared
    name at most once, the object closing only once every required one is written.

    One rule per state, a state being (the declared properties written, the members
    counted; the count only where min/maxProperties need it and extra keys make it differ
    from the number written). That is 2**n states for n declared properties, and no
    automaton does with fewer (after two different subsets some name is allowed after one
    and not the other); past objects.MAX_ORDER_STATES the declared properties keep declared
    order (state: the next one that may come) while extra keys still stand anywhere. Each member
    (key, colon, value) is one rule that every state calls, compiled once; a state holds
    only its calls and the separator."""
    g = self.g
    col = jg.colon(g)
    sep = jg.comma(g)
    n = len(present)
    n_req = sum(1 for _, _, r in present if r)
    if hi is not None and (n_req > hi or lo > hi):
        return ir.NOTHING
    if lo >= 2 and extras:
        raise CompileError("'minProperties' above 1 beside extra keys is not enforced (a "
                           "repeated key would count twice)", keyword="minProperties",
                           pointer=_ptr(ptr, "minProperties"))
    if lo > n + (1 if extras else 0):
        return ir.NOTHING
    # the member count matters up to the larger bound; in the subset states without extra
    # keys it is the number of properties written, which the state holds already
    bounded = lo > 1 or hi is not None
    top = hi if hi is not None else lo
    width = top + 1 if bounded and extras else 1
    subsets = n <= 30 and (1 << n) * width <= objects.MAX_ORDER_STATES
    counted = bounded and (bool(extras) or not subsets)
    if not subsets and counted and (n + 1) * (top + 1) > objects.MAX_COUNT_STATES:
        raise LimitError(f"counting {n} properties up to {top} needs more than "
                         f"{objects.MAX_COUNT_STATES} states",
                         keyword="maxProperties" if hi is not None else "minProperties",
                         pointer=_ptr(ptr,
                                      "maxProperties" if hi is not None else "minProperties"))
    kvs = []
    for name, e, _ in present:
        kv = ir.seq(ir.Bytes(jg.canonical_string(name)), col, e)
        if n > 1:
            # called from many states: one rule, so its positions (and their mask tables)
            # are shared by all of them (small ones are inlined back by the build)
            kv = g.add(self._rule_name(_ptr(ptr, "properties", name), "member"), kv)
        kvs.append(kv)
    extra = None
    if extras:
        extra = g.add(self._rule_name(ptr, "extra-member"),
                      jg.alt(*(ir.seq(k, col, v) for k, v in extras)))
    required = [j for j, (_, _, r) in enumerate(present) if r]
    req_mask = sum(1 << j for j in required)

    if subsets:
        # state s: the bit set of the declared properties written
        every = (1 << n) - 1

        def moves(s: int):
            # the properties not written yet, lowest first
            out = []
            free = every & ~s
            while free:
                low = free & -free
                out.append((low.bit_length() - 1, s | low))
                free ^= low
            return out

        def missing(s: int) -> int:
            return bin(req_mask & ~s).count("1")

        def left(s: int) -> int:
            return n - bin(s).count("1")
    else:
        # declared order: state i, properties i.. may come (up to the next required one)
        def moves(i: int):
            out = []
            for j in range(i, n):
                out.append((j, j + 1))
                if present[j][2]:
                    break
            return out

        def missing(i: int) -> int:
            return sum(1 for j in required if j >= i)

        def left(i: int) -> int:
            return n - i

    def cap(c: int) -> int:
        # counts past both bounds' reach behave alike: one state for them all
        if not counted:
            return 0
        return c if hi is not None else min(c, lo)

    def members_written(s: int, c: int) -> Optional[int]:
        # None: not tracked, and no bound needs it (a state follows at least one member)
        if counted:
            return c
        if bounded:
            return n - left(s)       # subset states without extra keys
        return None

    def viable(s: int, c: int) -> bool:
        # the object can still close from here (so every rule made is productive)
        k = members_written(s, c)
        if k is None:
            return True
        if hi is not None and k + missing(s) > hi:
            return False
        return extra is not None or k + left(s) >= lo

    def can_close(s: int, c: int) -> bool:
        k = members_written(s, c)
        return missing(s) == 0 and (k is None or k >= lo)

    # the state rules are named after the object rule, reserved now: variants of one
    # object (dependentRequired, merges) share a pointer, never a name
    obj = g.add(self._rule_name(ptr, "object"), ir.NOTHING, container=True)
    base = obj.name
    rules: Dict[Tuple[int, int], ir.Expr] = {}

    Seq, Alt, Ref, Nothing = ir.Seq, ir.Alt, ir.Ref, ir.Nothing
    # `sep nxt` is the Seq of their items when sep ends in a call (no literals to merge at
    # the seam) and nxt is a call, an Alt or a Seq ir.seq made: ir.seq's result, unscanned
    sep_items = sep.items if type(sep) is Seq and type(sep.items[-1]) is Ref else None

    # ir.seq(kv, r) of a member call and a state call is their Seq
    kv_calls = all(type(kv) is Ref for kv in kvs)

    def body(s: int, c: int) -> ir.Expr:
        # one member, then the rest of the object (the alternatives are distinct: no
        # ir.alt, whose deduplication would hash them all)
        c1 = cap(c + 1)
        alts = []
        for j, t in moves(s):
            if bounded and not viable(t, c1):
                continue
            r = rules.get((t, c1)) or state(t, c1)
            alts.append(Seq((kvs[j], r)) if kv_calls else ir.seq(kvs[j], r))
        if extra is not None and (not bounded or viable(s, c1)):
            alts.append(Seq((extra, rules.get((s, c1)) or state(s, c1))))
        return Alt(tuple(alts)) if len(alts) > 1 else alts[0] if alts else ir.NOTHING

    def state(s: int, c: int) -> ir.Expr:
        # after a member (c counted and capped already): a separator and another member,
        # or the end. The name is known before the rule is made (extra keys loop back to
        # it); rules are added callees first, so productive_rules settles them in one pass
        name = f"{base}~{s:x}.{c}"
        rules[(s, c)] = ref = Ref(name)
        nxt = body(s, c)
        t = type(nxt)
        if t is Nothing:
            more = ir.NOTHING
        elif sep_items is not None and t is Seq:
            more = Seq(sep_items + nxt.items)
        elif sep_items is not None and (t is Alt or t is Ref):
            more = Seq(sep_items + (nxt,))
        else:
            more = ir.seq(sep, nxt)
        if can_close(s, c):
            expr = ir.EMPTY if type(more) is Nothing else Alt((more, ir.EMPTY))
        else:
            expr = more
        g.add(name, expr)
        return ref

    members = body(0, 0)
    # body and state call each other through their closure cells, a cycle holding the
    # compiler and its grammar: unbound now, reference counting frees them with the
    # compile instead of a full collection walking the whole IR later
    body = state = None  # noqa: F811,F841  (unbinding the cells is the point)
    empty_ok = not required and lo == 0
    return g.add(base, jg.container(g, "{", members, "}", nullable_members=empty_ok),
                 container=True)
