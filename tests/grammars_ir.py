"""Small grammars written directly in the IR, shared by the matcher and mask tests."""
from cengine import CompileError, ir


def ir_or_none(fn, *args, **kw):
    """A front end's IR, or None when the front end itself refuses (not the builder's case)."""
    try:
        return fn(*args, **kw)
    except CompileError:
        return None


def json_like(max_depth=3, whitespace_budget=5) -> ir.GrammarIR:
    """A JSON subset with containers, strings (UTF-8), literals, a whitespace budget and depth."""
    g = ir.GrammarIR()
    ws = g.add("ws", ir.repeat(ir.ByteSet(((9, 10), (32, 32))), 0, None), whitespace=True)
    val = ir.Ref("value")
    g.add("value", ir.alt(ir.Ref("obj"), ir.Ref("arr"), ir.Ref("str"), ir.lit("true"),
                          ir.lit("null"),
                          ir.seq(ir.opt(ir.lit("-")), ir.ByteSet(((0x31, 0x39),)),
                                 ir.repeat(ir.ByteSet(((0x30, 0x39),)), 0, None))))
    g.add("str", ir.seq(ir.lit('"'), ir.repeat(ir.alt(
        ir.charset([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)]),
        ir.seq(ir.lit("\\"), ir.ByteSet(((0x22, 0x22), (0x5C, 0x5C), (0x6E, 0x6E))))), 0, None),
        ir.lit('"')))
    g.add("arr", ir.seq(ir.lit("["), ws, ir.opt(ir.seq(val, ws, ir.repeat(
        ir.seq(ir.lit(","), ws, val, ws), 0, None))), ir.lit("]")), container=True)
    member = ir.seq(ir.Ref("str"), ws, ir.lit(":"), ws, val, ws)
    g.add("obj", ir.seq(ir.lit("{"), ws, ir.opt(ir.seq(member, ir.repeat(
        ir.seq(ir.lit(","), ws, member), 0, None))), ir.lit("}")), container=True)
    g.add("root", ir.seq(ws, val, ws))
    g.root = "root"
    g.max_depth = max_depth
    g.whitespace_budget = whitespace_budget
    return g


def ambiguous() -> ir.GrammarIR:
    """Several stacks at once: overlapping alternatives across rules, nullable rules, recursion."""
    g = ir.GrammarIR()
    g.add("a", ir.repeat(ir.lit("ab"), 0, 3))
    g.add("b", ir.alt(ir.lit("aba"), ir.seq(ir.lit("a"), ir.Ref("b"), ir.lit("c")), ir.EMPTY))
    g.add("c", ir.seq(ir.Ref("a"), ir.Ref("b"), ir.opt(ir.lit("x"))))
    g.add("root", ir.repeat(ir.alt(ir.Ref("c"),
                                   ir.seq(ir.lit("("), ir.Ref("root"), ir.lit(")"))), 1, 4))
    return g


def counted() -> ir.GrammarIR:
    """Bounded repetition and multi-byte characters."""
    g = ir.GrammarIR()
    g.add("ch", ir.charset([(0x61, 0x63), (0xE9, 0xE9), (0x4E00, 0x4E02), (0x1F600, 0x1F601)]))
    g.add("root", ir.seq(ir.repeat(ir.Ref("ch"), 2, 5),
                         ir.opt(ir.seq(ir.lit("-"), ir.repeat(ir.Ref("ch"), 0, 3)))))
    return g


def counter_strings() -> ir.GrammarIR:
    """JSON strings whose lengths are counted on the stack (json_grammar.counter_string)
    with small levels, so the stacks of each level, the level ends and minimum lengths are
    all a few bytes away."""
    from cengine.schema import json_grammar as jg
    g = ir.GrammarIR()
    parts = [jg.counter_string(g, 0, 7, 2, 2), jg.counter_string(g, 2, 11, 3, 2),
             jg.counter_string(g, 5, None, 2, 2), jg.counter_string(g, 4, 19, 2, 3)]
    g.add("root", ir.seq(ir.lit("["), parts[0], ir.lit(","), parts[1], ir.lit(","), parts[2],
                         ir.lit(","), parts[3], ir.lit("]")))
    return g


ALL = {"json_like": json_like, "ambiguous": ambiguous, "counted": counted,
       "counter_strings": counter_strings}
