"""Every tool-call dialect under its family's real chat template (llama.cpp's models/templates
from the llama-cpp-python sdist) and a vocabulary carrying the family's special tokens
(tests/families.py): detection, what the template writes for an earlier call is what the call
grammar accepts (token by token, special tokens as themselves), and a live server on the
family's fixture model: the truncation gate in three API shapes, required / named / auto /
parallel_tool_calls false, streaming, and an agent loop with tool results across turns."""
from __future__ import annotations

import json

import jsonschema
import pytest

import cengine
import material
from families import FAMILIES
from server.runtime.chat_template import template_knows_tools
from server.tools import ToolSpec, dialect_for, get_dialect
from tool_text import parse_output

openai = pytest.importorskip("openai")

ORDER = {"type": "object",
         "properties": {"item": {"type": "string", "minLength": 2, "maxLength": 20},
                        "qty": {"type": "integer"},
                        "urgent": {"type": "boolean"},
                        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1,
                                 "maxItems": 3}},
         "required": ["item", "qty", "tags"]}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"},
                                            "days": {"type": "integer", "minimum": 1,
                                                     "maximum": 7}},
           "required": ["city"]}
SCHEMAS = {"place_order": ORDER, "get_weather": WEATHER}
SPECS = [ToolSpec(n, f"the {n} tool", s) for n, s in SCHEMAS.items()]
OA_TOOLS = [{"type": "function", "function": {"name": n, "description": f"the {n} tool",
                                              "parameters": s}}
            for n, s in SCHEMAS.items()]
AN_TOOLS = [{"name": n, "description": f"the {n} tool", "input_schema": s}
            for n, s in SCHEMAS.items()]
USER = {"role": "user", "content": "What is the weather in Paris?"}
EARLIER_CALL = {"role": "assistant", "content": "",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "get_weather",
                                             "arguments": json.dumps({"city": "Paris",
                                                                      "days": 2})}}]}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
               "content": json.dumps({"temperature": 21, "sky": "clear"})}
BUDGETS = [1, 2, 3, 5, 8, 16, 64]
# dialects whose tool name has no fixed text around it: llamay_choice_logprobs is a 400 there
# (none today: every dialect has CALL_POINTERS or NAME_MARKS)
NAME_UNMARKED: set = set()

KEYS = sorted(FAMILIES)


def _served(fam):
    """The dialect the server serves the family with (the variant its template writes)."""
    return dialect_for(material.chat_template(fam.template))


def _valid(name, args):
    assert name in SCHEMAS, name
    jsonschema.validate(args, SCHEMAS[name])


@pytest.fixture(scope="module", params=KEYS)
def family(request):
    fam = FAMILIES[request.param]
    try:
        path = fam.model_path()
    except FileNotFoundError as e:      # a template or vocabulary the sdist does not ship
        pytest.fail(f"{request.param}: {e}")
    return request.param, fam, path


@pytest.fixture(scope="module")
def family_model(family):
    from server.runtime.model import Model
    key, fam, path = family
    m = Model(str(path), n_ctx=2048)
    yield key, fam, m
    m.close()


# --- detection ------------------------------------------------------------------------------

def test_detected_from_the_template_and_vocabulary(family_model):
    key, fam, m = family_model
    d = dialect_for(m.chat_template, m.special_tokens)
    assert d.name == fam.dialect, f"{key}: {fam.template} detected as {d.name}"
    assert get_dialect(fam.dialect).name == fam.dialect
    from server.runtime.reasoning import detect_format
    fmt = detect_format(m.chat_template)
    assert (fmt.name if fmt else None) == fam.reasoning, f"{key}: reasoning {fmt}"


# --- what the model is shown is what it is held to -------------------------------------------

def _framing_only(m, text: str) -> bool:
    """text is nothing but the vocabulary's special tokens and whitespace."""
    for t in sorted(m.special_tokens, key=len, reverse=True):
        text = text.replace(t, "")
    return not text.strip()


def _rendered_call(m, fam, messages_before, call_message, result=TOOL_RESULT, **kw):
    """The text the template writes for the assistant turn holding the call: the rendering
    with the call minus the rendering up to the generation prompt. A family whose generation
    prompt ends with text the template never writes in an earlier assistant turn (an opened
    or empty reasoning block) declares it as extra["prompt_only"]: the prompt must end with
    exactly that. Beyond it, the generation prompt may end in framing tokens the finished turn
    does not repeat (`<think>` there, `</think>` in the history), nothing else."""
    head = m.render_chat(messages_before, add_generation_prompt=True, tools=OA_TOOLS, **kw)
    full = m.render_chat(messages_before + [call_message, result],
                         add_generation_prompt=False, tools=OA_TOOLS, **kw)
    only = fam.extra.get("prompt_only", "")
    if only:
        assert head.endswith(only), f"the generation prompt does not end with {only!r}"
        assert not full.startswith(head), "the declared prompt-only text is in the history too"
        head = head[:-len(only)]
    n = next((i for i in range(len(head), 0, -1)
              if full.startswith(head[:i]) and _framing_only(m, head[i:])), None)
    assert n is not None, "the template renders the conversation's start differently once " \
                          "a call follows"
    return full[n:]


def _accept_tokens(m, matcher, text):
    """Feed text as the family's tokenizer spells it (special tokens parsed); stop at the first
    token refused. -> (bytes of the accepted tokens, the text of the rest)."""
    ids = m.tokenize(text, add_bos=False, special=True)
    done = b""
    for i, t in enumerate(ids):
        if t in m.stop_ids or not matcher.accept_token(t):
            return done, m.detokenize(ids[i:]).decode("utf-8", "replace"), t
        done += m.token_bytes(t)
    return done, "", None


def _with_call_id(d, call_message, result):
    """The call and its result under the id the dialect's server would have given the call
    (templates that write ids check their form: Mistral's nine alphanumerics)."""
    cid = d.new_call_id(call_message["tool_calls"][0]["function"]["name"], 0)
    call = dict(call_message, tool_calls=[dict(call_message["tool_calls"][0], id=cid)])
    return call, dict(result, tool_call_id=cid)


def test_template_call_is_accepted_by_the_call_grammar(family_model):
    key, fam, m = family_model
    d = dialect_for(m.chat_template, m.special_tokens)
    # as the server renders: a template that knows no tools gets them from the dialect
    written = _rendered_call(m, fam, [USER], *_with_call_id(d, EARLIER_CALL, TOOL_RESULT),
                             tool_format=d)
    # what the template writes before the call that is another part of the output (an empty
    # reasoning block) is not the call grammar's: at most framing tokens and whitespace
    prefix = fam.extra.get("call_prefix", "")
    assert written.startswith(prefix), f"{key}: the template no longer writes {prefix!r}"
    start = written.find(d.trigger_text)
    assert start >= 0 and _framing_only(m, written[:start]), (key, written[:80])
    written = written[start:]
    matcher = d.call_grammar(SPECS, parallel=True).matcher(m.vocab)
    accepted, rest, refused = _accept_tokens(m, matcher, written)
    assert matcher.is_accepting(), (
        f"{key}: the grammar stopped inside what the template wrote for a call:\n"
        f"accepted {accepted!r}\nrest {rest!r}")
    # what follows the call is the end of the turn (and the tool result's turn), never call text
    assert refused is None or refused in m.stop_ids or not rest.strip() \
        or _turn_end(m, rest), f"{key}: after the call the template wrote {rest[:80]!r}"
    text, calls = parse_output(d, accepted.decode("utf-8"), SPECS)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Paris",
                                                                       "days": 2})], text


def _turn_end(m, rest: str) -> bool:
    """rest starts (after whitespace) with one of the vocabulary's end-of-generation texts or
    special tokens: the end of the assistant's turn."""
    r = rest.lstrip()
    ends = {m.token_bytes(i).decode("utf-8", "replace") for i in m.stop_ids}
    ends |= {m.runtime.token_text(i) for i in m.stop_ids}
    ends |= set(m.special_tokens)
    return any(e and r.startswith(e) for e in ends)


def test_auto_free_text_then_the_trigger_then_a_whole_call(family_model, monkeypatch):
    """tool_choice auto, token by token: free text, then the model writes a call in its own
    form (scripted: the random model never would); from the trigger on, the lazy grammar holds
    it, and the reader returns the text and the call."""
    import server.runtime.model as model_mod
    from scripted import ScriptedSampler
    from server.runtime.types import SamplingParams
    key, fam, m = family_model
    d = dialect_for(m.chat_template, m.special_tokens)
    call = d.call_text("get_weather", {"city": "Oslo", "days": 3})
    ScriptedSampler.script = m.tokenize("Let me check. " + call, add_bos=False, special=True)
    ScriptedSampler.refused, ScriptedSampler.lenient = [], False
    monkeypatch.setattr(model_mod, "Sampler", ScriptedSampler)
    monkeypatch.setattr(m, "fast_forward", False)
    prompt = m.render_chat([USER], tools=OA_TOOLS, tool_format=d)
    events = list(m.generate(prompt, lazy_grammar=d.lazy_call_grammar(SPECS, parallel=False),
                             params=SamplingParams(max_tokens=256, temperature=0)))
    out = b"".join(e.text for e in events[:-1]).decode("utf-8")
    text, calls = parse_output(d, out, SPECS)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather",
                                                       {"city": "Oslo", "days": 3})], out
    assert text.strip() == "Let me check.", out


def test_calls_prompt_renders_tools(family_model):
    """The template itself writes the tools into the prompt (no generic block); a template
    that knows no tools gets the generic block, asking for the family's own call form."""
    key, fam, m = family_model
    d = dialect_for(m.chat_template, m.special_tokens)
    prompt = m.render_chat([USER], tools=OA_TOOLS, tool_format=d)
    assert "get_weather" in prompt and "place_order" in prompt
    if template_knows_tools(m.chat_template):
        assert "You can call tools. Their signatures" not in prompt
    else:
        assert "You can call tools. Their signatures" in prompt
        assert d.call_text("tool_name", {"argument": "value"}) in prompt


# --- live server on the family's model --------------------------------------------------------

@pytest.fixture(scope="module")
def live_family(family):
    from server_harness import LiveServer
    from server.api.settings import Settings
    key, fam, path = family
    srv = LiveServer(Settings(model_path=str(path), n_ctx=2048))
    yield key, fam, srv
    srv.stop()


def test_health_names_the_dialect(live_family):
    import httpx
    key, fam, srv = live_family
    h = httpx.get(srv.base + "/health").json()
    assert h["tool_dialect"] == fam.dialect


@pytest.mark.truncation
@pytest.mark.parametrize("mode", ["required", "named"])
def test_truncation_gate_three_apis(live_family, mode):
    key, fam, srv = live_family
    oa, an = srv.openai(), srv.anthropic()
    for budget in BUDGETS:
        choice = ("required" if mode == "required"
                  else {"type": "function", "function": {"name": "place_order"}})
        r = oa.chat.completions.create(model=srv.model_name, messages=[USER], tools=OA_TOOLS,
                                       tool_choice=choice, max_tokens=budget, seed=budget)
        ch = r.choices[0]
        assert ch.message.tool_calls, (key, budget, ch.message.content)
        for c in ch.message.tool_calls:
            _valid(c.function.name, json.loads(c.function.arguments))
            if mode == "named":
                assert c.function.name == "place_order"
        assert ch.finish_reason in ("tool_calls", "length")

        a_choice = {"type": "any"} if mode == "required" else {"type": "tool",
                                                                "name": "place_order"}
        r = an.messages.create(model=srv.model_name, max_tokens=budget, tools=AN_TOOLS,
                               tool_choice=a_choice, messages=[USER])
        uses = [b for b in r.content if b.type == "tool_use"]
        assert uses, (key, budget, r.content)
        for u in uses:
            _valid(u.name, u.input)
        assert r.stop_reason in ("tool_use", "max_tokens")

        body = {"model": srv.model_name, "messages": [USER], "tools": OA_TOOLS,
                "stream": False, "options": {"num_predict": budget, "seed": budget},
                "tool_choice": choice}
        # Ollama's client sends no tool_choice (llamay's extension there): the body goes by
        # httpx and the official client's own response type reads it
        import httpx
        import ollama
        resp = ollama.ChatResponse.model_validate(
            httpx.post(srv.base + "/api/chat", json=body, timeout=120).json())
        calls = resp.message.tool_calls or []
        assert calls, (key, budget, resp)
        for c in calls:
            _valid(c.function.name, dict(c.function.arguments))


def test_auto_free_text_or_a_whole_call(live_family):
    key, fam, srv = live_family
    oa = srv.openai()
    for seed in range(6):
        r = oa.chat.completions.create(model=srv.model_name, messages=[USER], tools=OA_TOOLS,
                                       tool_choice="auto", max_tokens=48, seed=seed)
        m = r.choices[0].message
        for c in m.tool_calls or []:
            _valid(c.function.name, json.loads(c.function.arguments))
        d = _served(fam)
        assert d.trigger_text not in (m.content or "") or not m.tool_calls


def test_auto_beside_a_response_format(live_family):
    """tool_choice auto with a response format: one document of the format or the calls."""
    key, fam, srv = live_family
    rf = {"type": "json_schema", "json_schema": {"name": "w", "schema": WEATHER}}
    for seed in range(3):
        r = srv.openai().chat.completions.create(
            model=srv.model_name, messages=[USER], tools=OA_TOOLS, tool_choice="auto",
            response_format=rf, max_tokens=64, seed=seed,
            extra_body={"llamay_reasoning_budget": 2} if fam.reasoning else None)
        m = r.choices[0].message
        if m.tool_calls:
            for c in m.tool_calls:
                _valid(c.function.name, json.loads(c.function.arguments))
        else:
            jsonschema.validate(json.loads(m.content), WEATHER)


def test_single_call_when_parallel_is_off(live_family):
    key, fam, srv = live_family
    oa = srv.openai()
    for seed in range(3):
        r = oa.chat.completions.create(model=srv.model_name, messages=[USER], tools=OA_TOOLS,
                                       tool_choice="required", parallel_tool_calls=False,
                                       max_tokens=96, seed=seed)
        calls = r.choices[0].message.tool_calls
        assert calls and len(calls) == 1
        _valid(calls[0].function.name, json.loads(calls[0].function.arguments))


def test_anthropic_disable_parallel_tool_use(live_family):
    key, fam, srv = live_family
    for _ in range(2):
        r = srv.anthropic().messages.create(
            model=srv.model_name, max_tokens=96, tools=AN_TOOLS, messages=[USER],
            tool_choice={"type": "any", "disable_parallel_tool_use": True})
        uses = [b for b in r.content if b.type == "tool_use"]
        assert len(uses) == 1
        _valid(uses[0].name, uses[0].input)


def test_allowed_tools_narrows_the_calls(live_family):
    key, fam, srv = live_family
    choice = {"type": "allowed_tools",
              "allowed_tools": {"mode": "required",
                                "tools": [{"type": "function",
                                           "function": {"name": "get_weather"}}]}}
    for seed in range(2):
        r = srv.openai().chat.completions.create(model=srv.model_name, messages=[USER],
                                                 tools=OA_TOOLS, tool_choice=choice,
                                                 max_tokens=64, seed=seed)
        calls = r.choices[0].message.tool_calls
        assert calls and all(c.function.name == "get_weather" for c in calls)
    import httpx
    bad = {"type": "allowed_tools", "allowed_tools": {"mode": "required",
                                                      "tools": [{"type": "function",
                                                                 "function": {"name": "nope"}}]}}
    r = httpx.post(srv.base + "/v1/chat/completions", timeout=60, json={
        "model": srv.model_name, "messages": [USER], "tools": OA_TOOLS, "tool_choice": bad})
    assert r.status_code == 400 and r.json()["error"]["param"] == "tool_choice"


def test_streaming_holds_each_call_until_whole(live_family):
    key, fam, srv = live_family
    oa = srv.openai()
    stream = oa.chat.completions.create(model=srv.model_name, messages=[USER], tools=OA_TOOLS,
                                        tool_choice="required", max_tokens=64, seed=3,
                                        stream=True)
    calls, content = [], ""
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for c in delta.tool_calls or []:
            # each streamed call arrives whole: its arguments parse on their own
            _valid(c.function.name, json.loads(c.function.arguments))
            calls.append(c)
    assert calls
    assert _served(fam).trigger_text not in content


def test_agent_loop_across_turns(live_family):
    """Call, result, call again: each turn's prompt is the template's rendering of the earlier
    calls and results, and each call parses and validates."""
    key, fam, srv = live_family
    oa = srv.openai()
    messages = [USER]
    for turn in range(3):
        r = oa.chat.completions.create(model=srv.model_name, messages=messages, tools=OA_TOOLS,
                                       tool_choice="required", max_tokens=48, seed=turn)
        msg = r.choices[0].message
        assert msg.tool_calls
        for c in msg.tool_calls:
            _valid(c.function.name, json.loads(c.function.arguments))
        messages.append({"role": "assistant", "content": msg.content or "",
                         "tool_calls": [c.model_dump() for c in msg.tool_calls]})
        for c in msg.tool_calls:
            messages.append({"role": "tool", "tool_call_id": c.id, "name": c.function.name,
                             "content": json.dumps({"ok": True, "turn": turn})})
        # the assistant answers before the user speaks again (Mistral's templates refuse two
        # user turns in a row, tool turns aside)
        messages.append({"role": "assistant", "content": f"Result {turn} noted."})
        messages.append({"role": "user", "content": "And then?"})


def test_choice_logprobs_on_the_tool_name(live_family):
    key, fam, srv = live_family
    d = get_dialect(fam.dialect)
    import httpx
    body = {"model": srv.model_name, "messages": [USER], "tools": OA_TOOLS,
            "tool_choice": "required", "max_tokens": 48, "seed": 1,
            "llamay_choice_logprobs": True}
    if fam.reasoning:
        # a thought the budget cuts ends in the closer's call, which decides nothing
        body["llamay_reasoning_budget"] = 2
    if d.CALL_POINTERS is None and d.NAME_MARKS is None:
        # no fixed text around the tool name: refused, naming the field
        assert fam.dialect in NAME_UNMARKED
        r = httpx.post(srv.base + "/v1/chat/completions", json=body, timeout=120)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["param"] == "llamay_choice_logprobs"
        return
    r = httpx.post(srv.base + "/v1/chat/completions", json=body, timeout=120).json()
    tools = [x for x in r["llamay_choice_logprobs"] if x["pointer"] == "tool"]
    assert tools and sorted(tools[0]["alternatives"]) == sorted(SCHEMAS)
    assert tools[0]["chosen"] == r["choices"][0]["message"]["tool_calls"][0]["function"]["name"]


def test_special_framing_tokens_are_the_only_spelling(family_model):
    """Where the vocabulary has the framing as a special token, the call grammar's mask allows
    that token and not the same text spelled with ordinary tokens."""
    key, fam, m = family_model
    d = dialect_for(m.chat_template, m.special_tokens)
    trigger = d.trigger_text
    if trigger not in m.special_tokens:
        pytest.skip(f"{key}: the trigger {trigger!r} is text in this vocabulary")
    matcher = d.call_grammar(SPECS).matcher(m.vocab)
    special_id = next(i for i, t in m.vocab.special_ids.items() if t == trigger)
    mask = __import__("numpy").zeros(cengine.mask_words(m.vocab.size), "int32")
    matcher.fill_mask(mask)
    bits = __import__("numpy").unpackbits(mask.view("uint8"), bitorder="little")
    assert bits[special_id]
    # the text's first character as an ordinary token is not allowed (looked up by its bytes:
    # an SPM tokenizer would spell it with a word-start space)
    first = trigger[0].encode()
    ordinary = [i for i in range(m.vocab.size)
                if i not in m.vocab.special_ids and m.token_bytes(i) == first]
    assert ordinary and not any(bits[i] for i in ordinary)
