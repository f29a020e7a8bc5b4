"""The dialects whose framing tokens carry the call and whose arguments are one JSON object:
mistral (`[TOOL_CALLS][{...}]`), mistral_v11 (`[TOOL_CALLS]NAME[ARGS]{...}`), harmony
(gpt-oss's `to=functions.NAME` messages) and kimi_k2 (`<|tool_call_begin|>functions.NAME:IDX`).

Case tables, per dialect bound to its family's special tokens (tests/families.py): what the
reader makes of whole outputs and of the same outputs fed a character at a time (calls, the
text around them, broken or unknown calls left as text, the ids the next turn's template
needs), what the forced and the lazy grammars accept and refuse, that the closer ends every
cut of a call in a call that parses and validates, and which templates each detects."""
from __future__ import annotations

import json
import re

import jsonschema
import pytest

import cengine
import material
from families import FAMILIES
from server.tools import ToolSpec, get_dialect
from server.tools.registry import detect_dialect
from tool_text import parse_output, read_chunks

WEATHER = {"type": "object", "properties": {"city": {"type": "string"},
                                            "days": {"type": "integer", "minimum": 1}},
           "required": ["city"]}
ORDER = {"type": "object", "properties": {"item": {"type": "string", "minLength": 2},
                                          "qty": {"type": "integer"}},
         "required": ["item", "qty"]}
SCHEMAS = {"get_weather": WEATHER, "place_order": ORDER}
SPECS = [ToolSpec(n, "", s) for n, s in SCHEMAS.items()]


def _specials(key):
    return {t for t, _ in FAMILIES[key].tokens}


NEMO = get_dialect("mistral").bind(_specials("mistral-nemo"))
V11 = get_dialect("mistral_v11").bind(_specials("mistral-small-3.2"))
V11_NO_CALL_ID = get_dialect("mistral_v11").bind(_specials("mistral-small-3.2") - {"[CALL_ID]"})
HARMONY = get_dialect("harmony").bind(_specials("gpt-oss"))
KIMI = get_dialect("kimi_k2").bind(_specials("kimi-k2"))
DIALECTS = {"mistral": NEMO, "mistral_v11": V11, "harmony": HARMONY, "kimi_k2": KIMI}

WA = '{"city": "Paris", "days": 2}'
OA = '{"item": "tea", "qty": 3}'
WC = ("get_weather", {"city": "Paris", "days": 2})
OC = ("place_order", {"item": "tea", "qty": 3})
K = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
     "<|tool_call_argument_begin|>", "<|tool_call_end|>")


def kimi(*calls, begin=True, end=True):
    """A Kimi section of (call id, arguments) pairs."""
    body = "".join(K[2] + cid + K[3] + args + K[4] for cid, args in calls)
    return (K[0] if begin else "") + body + (K[1] if end else "")


def spelled(d, text: str) -> bytes:
    """text as the matcher's bytes: each of the dialect's special tokens marked."""
    if not d.specials:
        return text.encode()
    pattern = "|".join(re.escape(s) for s in sorted(d.specials, key=len, reverse=True))
    out, at = b"", 0
    for m in re.finditer(pattern, text):
        out += text[at:m.start()].encode() + cengine.special_bytes(m.group())
        at = m.end()
    return out + text[at:].encode()


# --- the reader -------------------------------------------------------------------------------

READS = [
    # (dialect, output, text outside the calls, calls)
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + "}]", "", [WC]),
    ("mistral", '[TOOL_CALLS] [{"name": "get_weather", "arguments": ' + WA
     + ', "id": "a1B2c3D4e"}, {"name": "place_order", "arguments": ' + OA + "}]", "", [WC, OC]),
    ("mistral", 'Sure. [TOOL_CALLS][{"name": "place_order", "arguments": ' + OA + "}]",
     "Sure.", [OC]),
    ("mistral", "no call here [TOOL", "no call here [TOOL", []),
    # unknown tool, a bad id, extra keys, not an array: the region stays text
    ("mistral", '[TOOL_CALLS][{"name": "launch", "arguments": {}}]',
     '[TOOL_CALLS][{"name": "launch", "arguments": {}}]', []),
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + ', "id": "x"}]',
     '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + ', "id": "x"}]', []),
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "parameters": ' + WA + "}]",
     '[TOOL_CALLS][{"name": "get_weather", "parameters": ' + WA + "}]", []),
    ("mistral", '[TOOL_CALLS]{"name": "get_weather", "arguments": ' + WA + "}",
     '[TOOL_CALLS]{"name": "get_weather", "arguments": ' + WA + "}", []),
    ("mistral", "[TOOL_CALLS][]", "[TOOL_CALLS][]", []),
    # cut inside the array: the call before the cut is whole, the rest is text
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + '}, {"name": "pl',
     ', {"name": "pl', [WC]),
    ("mistral", '[TOOL_CALLS][{"name": "get_wea', '[TOOL_CALLS][{"name": "get_wea', []),

    ("mistral_v11", "[TOOL_CALLS]get_weather[ARGS]" + WA, "", [WC]),
    ("mistral_v11", "[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]" + WA
     + "[TOOL_CALLS]place_order[ARGS]" + OA, "", [WC, OC]),
    ("mistral_v11", "[THINK]weather first[/THINK][TOOL_CALLS]get_weather[ARGS]" + WA,
     "[THINK]weather first[/THINK]", [WC]),
    ("mistral_v11", "[TOOL_CALLS]launch[ARGS]{}", "[TOOL_CALLS]launch[ARGS]{}", []),
    ("mistral_v11", "[TOOL_CALLS]get_weather[CALL_ID]short[ARGS]" + WA,
     "[TOOL_CALLS]get_weather[CALL_ID]short[ARGS]" + WA, []),
    ("mistral_v11", "[TOOL_CALLS]get_weather[ARGS][1, 2]",
     "[TOOL_CALLS]get_weather[ARGS][1, 2]", []),
    ("mistral_v11", "[TOOL_CALLS]get_weather " + WA, "[TOOL_CALLS]get_weather " + WA, []),
    ("mistral_v11", "[TOOL_CALLS]get_weather[ARGS]" + WA + "[TOOL_CALLS]place_order[ARGS]{",
     "[TOOL_CALLS]place_order[ARGS]{", [WC]),

    # harmony: recipient in the role header (the template's form) or in the channel header
    ("harmony", " to=functions.get_weather<|channel|>commentary json<|message|>" + WA, "", [WC]),
    ("harmony", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
     + WA, "", [WC]),
    ("harmony", "<|channel|>commentary to=functions.place_order<|message|>" + OA, "", [OC]),
    ("harmony", "<|channel|>analysis<|message|>The user wants weather.<|end|><|start|>assistant"
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + WA,
     "<|channel|>analysis<|message|>The user wants weather.<|end|><|start|>assistant", [WC]),
    ("harmony", "<|channel|>analysis<|message|>hm<|end|><|start|>assistant to=functions."
     "get_weather<|channel|>commentary json<|message|>" + WA,
     "<|channel|>analysis<|message|>hm<|end|><|start|>assistant", [WC]),
    # an answer is no call; nor is an unknown tool or a header the format does not have
    ("harmony", "<|channel|>final<|message|>It is sunny.", "<|channel|>final<|message|>It is "
     "sunny.", []),
    ("harmony", "<|channel|>commentary to=functions.launch <|constrain|>json<|message|>{}",
     "<|channel|>commentary to=functions.launch <|constrain|>json<|message|>{}", []),
    ("harmony", " to=functions.get_weather<|channel|>commentary yaml<|message|>" + WA,
     " to=functions.get_weather<|channel|>commentary yaml<|message|>" + WA, []),
    ("harmony", "<|channel|>commentary to=functions.get_weather<|message|>{\"city\": ",
     "<|channel|>commentary to=functions.get_weather<|message|>{\"city\": ", []),

    ("kimi_k2", kimi(("functions.get_weather:0", WA)), "", [WC]),
    ("kimi_k2", "Checking. " + kimi(("functions.get_weather:0", WA),
                                    ("functions.place_order:1", OA)), "Checking.", [WC, OC]),
    ("kimi_k2", "<think>plan</think>" + kimi(("functions.get_weather:7", WA)),
     "<think>plan</think>", [WC]),
    ("kimi_k2", kimi(("functions.launch:0", "{}")), kimi(("functions.launch:0", "{}")), []),
    ("kimi_k2", kimi(("get_weather:0", WA)), kimi(("get_weather:0", WA)), []),
    ("kimi_k2", kimi(("functions.get_weather:x", WA)), kimi(("functions.get_weather:x", WA)), []),
    ("kimi_k2", kimi(("functions.get_weather", WA)), kimi(("functions.get_weather", WA)), []),
    ("kimi_k2", K[0] + "functions.get_weather:0" + K[3] + WA + K[1],
     K[0] + "functions.get_weather:0" + K[3] + WA + K[1], []),
    # cut after a whole call: the call is out, the rest is text
    ("kimi_k2", kimi(("functions.get_weather:0", WA), end=False) + K[2] + "functions.pl",
     K[2] + "functions.pl", [WC]),
]


def _read(d, chunks):
    return read_chunks(d, chunks, SPECS)


@pytest.mark.parametrize("name,output,text,calls", READS)
def test_reader(name, output, text, calls):
    d = DIALECTS[name]
    got_text, got = parse_output(d, output, SPECS)
    assert (got_text, [(c.name, c.arguments) for c in got]) == (text, calls)
    # a character at a time, and in two pieces at every place: the same text and calls
    for chunks in [list(output)] + [[output[:i], output[i:]]
                                    for i in range(0, len(output), max(1, len(output) // 9))]:
        t, cs = _read(d, chunks)
        assert [(c.name, c.arguments) for c in cs] == calls, chunks
        assert (t.strip() if cs else t) == text, chunks


def test_streaming_releases_each_call_once_whole():
    """A call is out as soon as it is whole, before the next one or the section's end."""
    for d, output, whole in [
            (NEMO, '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + "}, ",
             len('[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + "}")),
            (V11, "[TOOL_CALLS]get_weather[ARGS]" + WA, len("[TOOL_CALLS]get_weather[ARGS]" + WA)),
            (KIMI, kimi(("functions.get_weather:0", WA), end=False), None)]:
        reader = d.call_reader(SPECS)
        whole = whole or len(output)
        seen = []
        for i, ch in enumerate(output):
            for k, v in reader.feed(ch):
                if k == "call":
                    seen.append(i + 1)
                else:
                    assert not v.strip(), (d, v)
        assert seen == [whole], (d, seen)


def test_call_ids_fit_the_templates():
    """Mistral's templates refuse ids that are not nine alphanumerics; Kimi's write
    functions.NAME:IDX, numbering a turn's calls from 0; the others keep the default form."""
    _, calls = parse_output(NEMO, '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA
                                 + '}, {"name": "get_weather", "arguments": ' + WA + "}]", SPECS)
    assert len(calls) == 2 and calls[0].id != calls[1].id
    assert all(re.fullmatch("[A-Za-z0-9]{9}", c.id) for c in calls)
    _, calls = parse_output(V11, "[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]" + WA, SPECS)
    assert re.fullmatch("[A-Za-z0-9]{9}", calls[0].id)
    _, calls = parse_output(KIMI, kimi(("functions.place_order:4", OA),
                                      ("functions.get_weather:9", WA)), SPECS)
    assert [c.id for c in calls] == ["functions.place_order:0", "functions.get_weather:1"]
    _, calls = parse_output(HARMONY, HARMONY.call_text("get_weather", WC[1]), SPECS)
    assert calls[0].id.startswith("call_")


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_call_text_reads_back(name):
    d = DIALECTS[name]
    text, calls = parse_output(d, d.call_text(*OC), SPECS)
    assert (text, [(c.name, c.arguments) for c in calls]) == ("", [OC])
    assert d.call_text(*OC).startswith(d.trigger_text)


# --- the grammars -----------------------------------------------------------------------------

FORCED = [
    # (dialect, parallel, output, accepted as the whole output)
    ("mistral", True, '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + "}]", True),
    ("mistral", True, '[TOOL_CALLS] [{"name": "get_weather", "arguments": ' + WA
     + ', "id": "a1B2c3D4e"},{"name": "place_order", "arguments": ' + OA + "}]", True),
    ("mistral", False, '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + "}, "
     '{"name": "place_order", "arguments": ' + OA + "}]", False),
    ("mistral", True, '[TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA
     + ', "id": "a1B2c3D4"}]', False),
    ("mistral", True, '[TOOL_CALLS][{"name": "get_weather", "arguments": {"days": 2}}]', False),
    ("mistral", True, '[TOOL_CALLS][{"name": "launch", "arguments": {}}]', False),
    ("mistral", True, "[TOOL_CALLS][]", False),
    ("mistral", True, '[{"name": "get_weather", "arguments": ' + WA + "}]", False),

    ("mistral_v11", True, "[TOOL_CALLS]get_weather[ARGS]" + WA, True),
    ("mistral_v11", True, "[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]" + WA
     + "[TOOL_CALLS]place_order[ARGS]" + OA, True),
    ("mistral_v11", False, "[TOOL_CALLS]get_weather[ARGS]" + WA + "[TOOL_CALLS]place_order[ARGS]"
     + OA, False),
    ("mistral_v11", True, "[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4[ARGS]" + WA, False),
    ("mistral_v11", True, "[TOOL_CALLS] get_weather[ARGS]" + WA, False),
    ("mistral_v11", True, "[TOOL_CALLS]get_weather[ARGS] " + WA, False),
    ("mistral_v11", True, "[TOOL_CALLS]get_weather[ARGS]" + OA, False),

    ("harmony", False, " to=functions.get_weather<|channel|>commentary json<|message|>" + WA, True),
    ("harmony", False, " to=functions.get_weather<|channel|>commentary <|constrain|>json"
     "<|message|>" + WA, True),
    ("harmony", False, " to=functions.get_weather<|channel|>commentary<|message|>" + WA, True),
    ("harmony", False, "<|channel|>commentary to=functions.get_weather <|constrain|>json"
     "<|message|>" + WA, True),
    ("harmony", False, "<|channel|>commentary to=functions.place_order<|message|>" + OA, True),
    # no channel; the channel twice; the analysis channel; another content type; two calls
    ("harmony", False, " to=functions.get_weather json<|message|>" + WA, False),
    ("harmony", False, "<|channel|>commentary to=functions.get_weather<|channel|>commentary"
     "<|message|>" + WA, False),
    ("harmony", False, "<|channel|>analysis to=functions.get_weather<|message|>" + WA, False),
    ("harmony", False, " to=functions.get_weather<|channel|>commentary yaml<|message|>" + WA,
     False),
    ("harmony", True, " to=functions.get_weather<|channel|>commentary json<|message|>" + WA
     + " to=functions.get_weather<|channel|>commentary json<|message|>" + WA, False),
    ("harmony", False, "<|channel|>final<|message|>" + WA, False),

    ("kimi_k2", True, kimi(("functions.get_weather:0", WA)), True),
    ("kimi_k2", True, kimi(("functions.get_weather:0", WA), ("functions.place_order:12", OA)),
     True),
    ("kimi_k2", False, kimi(("functions.get_weather:0", WA), ("functions.place_order:1", OA)),
     False),
    ("kimi_k2", True, kimi(("functions.get_weather:01", WA)), False),
    ("kimi_k2", True, kimi(("functions.get_weather:", WA)), False),
    ("kimi_k2", True, kimi(("functions.place_order:0", WA)), False),
    ("kimi_k2", True, kimi(("functions.get_weather:0", WA), begin=False), False),
    ("kimi_k2", True, kimi(("functions.get_weather:0", WA), end=False), False),
    ("kimi_k2", True, K[0] + K[1], False),
]


@pytest.mark.parametrize("name,parallel,output,ok", FORCED)
def test_forced_grammar(name, parallel, output, ok):
    d = DIALECTS[name]
    m = d.call_grammar(SPECS, parallel=parallel).matcher()
    assert (m.accept_bytes(spelled(d, output)) and m.is_accepting()) == ok
    if ok:
        _, calls = parse_output(d, output, SPECS)
        assert calls and all(jsonschema.validate(c.arguments, SCHEMAS[c.name]) is None
                             for c in calls)


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_special_tokens_spelled_as_text_are_refused(name):
    """The framing is the vocabulary's special token, never the same text."""
    d = DIALECTS[name]
    ok = next(o for n, _, o, good in FORCED if n == name and good)
    m = d.call_grammar(SPECS).matcher()
    assert not (m.accept_bytes(ok.encode()) and m.is_accepting())


def test_v11_call_id_only_where_the_vocabulary_has_it():
    out = "[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]" + WA
    for d, ok in ((V11, True), (V11_NO_CALL_ID, False)):
        m = d.call_grammar(SPECS).matcher()
        assert (m.accept_bytes(spelled(d, out)) and m.is_accepting()) == ok


LAZY = [
    # (dialect, free text then the call, accepted): after the trigger the call must follow
    ("mistral", 'Let me see. [TOOL_CALLS][{"name": "get_weather", "arguments": ' + WA + "}]",
     True),
    ("mistral_v11", "[THINK]weather[/THINK][TOOL_CALLS]get_weather[ARGS]" + WA
     + "[TOOL_CALLS]place_order[ARGS]" + OA, True),
    ("mistral_v11", "[TOOL_CALLS]get_weather[ARGS]" + WA + " and more", False),
    ("harmony", "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant<|channel|>"
     "commentary to=functions.get_weather <|constrain|>json<|message|>" + WA, True),
    ("harmony", "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant"
     " to=functions.get_weather<|channel|>commentary json<|message|>" + WA, True),
    ("harmony", " to=functions.get_weather<|channel|>commentary json<|message|>" + WA, True),
    ("harmony", "<|channel|>commentary to=functions.launch <|constrain|>json<|message|>{}",
     False),
    ("harmony", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
     + WA + "<|end|>", False),
    ("kimi_k2", "<think>plan</think>Checking. " + kimi(("functions.get_weather:0", WA)), True),
    ("kimi_k2", kimi(("functions.get_weather:0", WA)) + "done", False),
]


@pytest.mark.parametrize("name,output,ok", LAZY)
def test_lazy_grammar(name, output, ok):
    """As the decode loop runs it: free until the trigger (in the matcher's bytes), then the
    grammar of what follows it."""
    d = DIALECTS[name]
    trigger, g = d.lazy_call_grammar(SPECS)
    trigger = trigger if isinstance(trigger, bytes) else trigger.encode()
    data = spelled(d, output)
    at = data.find(trigger)
    assert at >= 0
    m = g.matcher()
    assert (m.accept_bytes(data[at + len(trigger):]) and m.is_accepting()) == ok


def test_harmony_lazy_trigger_fires_on_a_call_only():
    """Analysis and final messages never hold the trigger; both call headers do."""
    trigger, _ = HARMONY.lazy_call_grammar(SPECS)
    for text in ("<|channel|>analysis<|message|>I should call a tool.<|end|><|start|>assistant",
                 "<|channel|>final<|message|>The weather is fine.",
                 "<|channel|>commentary<|message|>Checking.<|end|>"):
        assert trigger not in text
    for text in (" to=functions.get_weather<|channel|>commentary json<|message|>",
                 "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"):
        assert trigger in text


CALLS_TO_CUT = [
    ("mistral", '[TOOL_CALLS][{"name": "place_order", "arguments": ' + OA
     + ', "id": "a1B2c3D4e"}, {"name": "get_weather", "arguments": ' + WA + "}]"),
    ("mistral_v11", "[TOOL_CALLS]place_order[CALL_ID]a1B2c3D4e[ARGS]" + OA
     + "[TOOL_CALLS]get_weather[ARGS]" + WA),
    ("harmony", "<|channel|>commentary to=functions.place_order <|constrain|>json<|message|>" + OA),
    ("harmony", " to=functions.get_weather<|channel|>commentary json<|message|>" + WA),
    ("kimi_k2", kimi(("functions.place_order:0", OA), ("functions.get_weather:1", WA))),
]


@pytest.mark.parametrize("name,output", CALLS_TO_CUT)
def test_closer_ends_every_cut_in_valid_calls(name, output):
    d = DIALECTS[name]
    data = spelled(d, output)
    for cut in range(len(data) + 1):
        m = d.call_grammar(SPECS).matcher()
        if not m.accept_bytes(data[:cut]):
            continue        # inside a special token's marked spelling
        whole = cengine.plain_text(data[:cut] + m.completion()).decode()
        text, calls = parse_output(d, whole, SPECS)
        assert calls and not text, (cut, whole)
        for c in calls:
            jsonschema.validate(c.arguments, SCHEMAS[c.name])


# --- detection --------------------------------------------------------------------------------

DETECTS = [
    ("mistralai-Mistral-Nemo-Instruct-2407", "mistral"),
    ("Mistral-Small-3.2-24B-Instruct-2506", "mistral_v11"),
    ("unsloth-mistral-Devstral-Small-2507", "mistral_v11"),
    ("mistralai-Ministral-3-14B-Reasoning-2512", "mistral_v11"),
    ("openai-gpt-oss-120b", "harmony"),
    ("moonshotai-Kimi-K2", "kimi_k2"),
    ("Kimi-K2-Instruct", "kimi_k2"),
    ("Kimi-K2-Thinking", "kimi_k2"),
]
MINE = ("mistral", "mistral_v11", "harmony", "kimi_k2")


@pytest.mark.parametrize("template,dialect", DETECTS)
def test_detection(template, dialect):
    source = material.chat_template(template)
    assert detect_dialect(source).name == dialect
    # and no other of these dialects claims it
    for other in MINE:
        if other != dialect:
            assert type(get_dialect(other)).detect(source, frozenset()) == 0, other


@pytest.mark.parametrize("template", ["Kimi-K3", "Qwen-Qwen2.5-7B-Instruct",
                                      "meta-llama-Llama-3.1-8B-Instruct",
                                      "NousResearch-Hermes-3-Llama-3.1-8B-tool_use"])
def test_other_templates_are_not_claimed(template):
    """Kimi K3 writes calls as attribute-tagged <|open|>call blocks: not kimi_k2's format."""
    source = material.chat_template(template)
    for name in MINE:
        assert type(get_dialect(name)).detect(source, frozenset()) == 0, name


def test_families_have_the_framing_tokens():
    """Each family's vocabulary holds its dialect's framing as special tokens."""
    need = {"mistral": {"[TOOL_CALLS]"}, "mistral_v11": {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"},
            "harmony": {"<|channel|>", "<|message|>", "<|constrain|>", "<|call|>"},
            "kimi_k2": set(K)}
    for key, fam in FAMILIES.items():
        if fam.dialect in need:
            assert need[fam.dialect] <= _specials(key), key


def test_harmony_call_text_is_the_template_form():
    assert HARMONY.call_text("get_weather", {"city": "Paris"}) == (
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}')
    assert json.loads(HARMONY.call_text("get_weather", {"city": "P"}).split("<|message|>")[1])
