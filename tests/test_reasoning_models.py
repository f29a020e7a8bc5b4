"""Reasoning models under their real chat templates (llama.cpp's models/templates from the
llama-cpp-python sdist) and vocabularies with their thought markers as special tokens
(tests/families.py): detection, the thought free and the constraint after it, a thought that
writes the call trigger staying text, the thought budget, the truncation gate across the thought
in three API shapes, and each API's reasoning field read by the official clients."""
from __future__ import annotations

import datetime
import json
import types

import httpx
import jsonschema
import pytest

import material
from families import FAMILIES
from server.runtime import chat_template
from server.runtime import reasoning as rz
from scripted import ScriptedSampler
from server.runtime.types import ReasoningPlan, SamplingParams
from tool_text import parse_output

openai = pytest.importorskip("openai")

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "unit": {"enum": ["C", "F"]}},
           "required": ["city", "unit"]}
OA_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
AN_TOOLS = [{"name": "get_weather", "input_schema": WEATHER}]
USER = {"role": "user", "content": "Weather in Paris?"}
BUDGETS = [1, 2, 3, 5, 8, 16, 64]
RF = {"type": "json_schema", "json_schema": {"name": "w", "schema": WEATHER}}

# (template, the format the server must detect)
DETECTION = [
    ("Qwen-Qwen3-0.6B", "think"), ("Qwen-QwQ-32B", "think"),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "think"),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "think"), ("llama-cpp-deepseek-r1", "think"),
    ("HuggingFaceTB-SmolLM3-3B", "think"), ("Kimi-K2-Thinking", "think"),
    ("GLM-4.7-Flash", "think"), ("MiniMax-M2", "think"),
    ("NVIDIA-Nemotron-Nano-v2", "think"), ("openai-gpt-oss-120b", "harmony"),
    ("mistralai-Ministral-3-14B-Reasoning-2512", "mistral"), ("ByteDance-Seed-OSS", "seed"),
    ("google-gemma-4-31B-it", "gemma4"),
    ("meta-llama-Llama-3.1-8B-Instruct", None), ("Qwen-Qwen2.5-7B-Instruct", None),
    ("mistralai-Mistral-Nemo-Instruct-2407", None),
]


@pytest.mark.parametrize("template,expected", DETECTION)
def test_format_detected_from_the_real_template(template, expected):
    fmt = rz.detect_format(material.chat_template(template))
    assert (fmt.name if fmt else None) == expected


def _render(template: str, **switches) -> str:
    from server.runtime.chat_template import render_chat
    return render_chat(material.chat_template(template), [USER], template_vars=switches,
                       bos_token="<s>", eos_token="</s>")


@pytest.mark.parametrize("template,thinking,opened", [
    ("Qwen-Qwen3-0.6B", True, None),        # the model opens its thought itself
    ("Qwen-Qwen3-0.6B", False, False),      # enable_thinking false: <think>\n\n</think>
    ("Qwen-QwQ-32B", True, True),           # the generation prompt ends in <think>
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", True, True),
    # this template closes the thought by default: asked to think, it opens it
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", False, False),
])
def test_template_switches_and_the_opened_thought(template, thinking, opened):
    text = material.chat_template(template)
    switches = rz.template_switches(text, thinking)
    prompt = _render(template, **switches)
    assert rz.opened_thought(prompt, rz.detect_format(text)) is opened


# --- the decode loop, token by token ----------------------------------------------------------

@pytest.fixture(scope="module")
def qwen3_model():
    from server.runtime.model import Model
    m = Model(str(FAMILIES["qwen3"].model_path()), n_ctx=2048)
    yield m
    m.close()


def _ids(m, text):
    return m.tokenize(text, add_bos=False, special=True)


def _run(m, monkeypatch, script, *, grammar=None, lazy=None, plan, max_tokens=64,
         lenient=False):
    import server.runtime.model as model_mod
    ScriptedSampler.script, ScriptedSampler.refused = script, []
    ScriptedSampler.lenient = lenient
    monkeypatch.setattr(model_mod, "Sampler", ScriptedSampler)
    # every token of the script is sampled (fast-forward would write some of them itself)
    monkeypatch.setattr(m, "fast_forward", False)
    prompt = m.render_chat([USER], tools=OA_TOOLS)
    events = list(m.generate(prompt, grammar=grammar, lazy_grammar=lazy,
                             params=SamplingParams(max_tokens=max_tokens, temperature=0),
                             reasoning=plan))
    parts = {"answer": b"", "thought": b"", "marker": b""}
    for e in events[:-1]:
        parts[e.part] += e.text
    return {k: v.decode("utf-8", "replace") for k, v in parts.items()}, events[-1]


def _plan(budget=None, opened=False):
    return ReasoningPlan("<think>", "</think>", "\n\n", opened=opened, budget=budget)


def test_a_thought_that_writes_the_trigger_stays_text(qwen3_model, monkeypatch):
    from server.tools import ToolSpec, dialect_for
    m = qwen3_model
    d = dialect_for(m.chat_template, m.special_tokens)
    lazy = d.lazy_call_grammar([ToolSpec("get_weather", "", WEATHER)])
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "C"}}\n' \
           '</tool_call>'
    script = _ids(m, "<think>I should write " + call + " now.</think>") + _ids(m, call)
    parts, fin = _run(m, monkeypatch, script, lazy=lazy, plan=_plan())
    assert call in parts["thought"]                     # the trigger inside the thought is text
    assert parts["marker"] == "<think></think>\n\n"
    text, calls = parse_output(d, parts["answer"], [ToolSpec("get_weather", "", WEATHER)])
    assert [(c.name, c.arguments) for c in calls] == [("get_weather",
                                                       {"city": "Oslo", "unit": "C"})]


def test_the_constraint_starts_after_the_thought(qwen3_model, monkeypatch):
    import cengine
    m = qwen3_model
    g = cengine.compile_json_schema(WEATHER, surrounding_whitespace=False)
    # inside the thought anything goes, even text the schema would refuse
    script = _ids(m, "<think>not JSON { at all</think>")
    parts, fin = _run(m, monkeypatch, script, grammar=g, plan=_plan())
    assert parts["thought"] == "not JSON { at all"
    jsonschema.validate(json.loads(parts["answer"]), WEATHER)
    assert fin.reason == "stop"


def test_the_thought_budget_ends_the_thought(qwen3_model, monkeypatch):
    import cengine
    m = qwen3_model
    g = cengine.compile_json_schema(WEATHER, surrounding_whitespace=False)
    words = _ids(m, "<think>") + _ids(m, " a b c d e f g h i j k l")
    parts, fin = _run(m, monkeypatch, words, grammar=g, plan=_plan(budget=4), lenient=True)
    assert parts["thought"] == " a b c d" and len(_ids(m, parts["thought"])) == 4
    # the words after the budget were refused: the answer's constraint had started
    assert ScriptedSampler.refused[:1] == _ids(m, " e")
    assert parts["marker"] == "<think></think>\n\n"
    jsonschema.validate(json.loads(parts["answer"]), WEATHER)


@pytest.mark.parametrize("budget", BUDGETS)
def test_the_closer_closes_the_thought_then_the_answer(qwen3_model, monkeypatch, budget):
    import cengine
    m = qwen3_model
    g = cengine.compile_json_schema(WEATHER, surrounding_whitespace=False)
    words = _ids(m, "<think>") + _ids(m, " a b c d e f g h i j k l m n o p q r s t u v w x y z"
                                      * 4)
    parts, fin = _run(m, monkeypatch, words, grammar=g, plan=_plan(), max_tokens=budget)
    assert fin.reason == "length"
    assert parts["marker"].endswith("</think>\n\n")
    jsonschema.validate(json.loads(parts["answer"]), WEATHER)


def test_an_opened_thought_and_thinking_off(qwen3_model, monkeypatch):
    import cengine
    m = qwen3_model
    g = cengine.compile_json_schema(WEATHER, surrounding_whitespace=False)
    # the prompt opened the thought: the first tokens are thought already
    parts, _ = _run(m, monkeypatch, _ids(m, "hmm</think>"), grammar=g, plan=_plan(opened=True))
    assert parts["thought"] == "hmm" and parts["marker"] == "</think>\n\n"
    # thinking off in an opened thought: the end marker is written at once
    parts, _ = _run(m, monkeypatch, [], grammar=g, plan=_plan(budget=0, opened=True))
    assert parts["thought"] == "" and parts["marker"] == "</think>\n\n"
    jsonschema.validate(json.loads(parts["answer"]), WEATHER)


def test_no_thought_is_opened_when_the_model_answers_at_once(qwen3_model, monkeypatch):
    import cengine
    m = qwen3_model
    g = cengine.compile_json_schema(WEATHER, surrounding_whitespace=False)
    parts, _ = _run(m, monkeypatch, _ids(m, '{"city": "Rome", "unit": "F"}'), grammar=g,
                    plan=_plan())
    assert parts["thought"] == "" and parts["marker"] == ""
    assert json.loads(parts["answer"]) == {"city": "Rome", "unit": "F"}


# --- live servers: three API shapes ---------------------------------------------------------

# Qwen3 leaves the thought to the model; QwQ and the R1 distill open it in the generation
# prompt; gpt-oss writes its analysis channel itself
THINKERS = ["qwen3", "qwq", "deepseek-r1-distill-qwen", "gpt-oss"]
OPENS_THE_THOUGHT = {"qwq", "deepseek-r1-distill-qwen"}


def _markers(fam):
    f = rz.FORMATS[fam.reasoning]
    return [m for m in (f.start.strip(), f.end.strip(), "<|channel|>", "<|message|>")
            if m]


class _PinnedClock(datetime.datetime):
    """A fixed `now` for the templates' strftime_now: gpt-oss's writes the current date into
    the prompt, so the random model's answers (and whether a 48-token one reaches `unit`)
    changed from one day to the next."""

    @classmethod
    def now(cls, tz=None):
        return cls(2026, 12, 7, 12, 0, tzinfo=tz)


@pytest.fixture(scope="module", params=THINKERS)
def live_thinker(request):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chat_template, "datetime", types.SimpleNamespace(datetime=_PinnedClock))
        yield from _live_thinker(request)


def _live_thinker(request):
    from server_harness import LiveServer
    from server.api.settings import Settings
    fam = FAMILIES[request.param]
    # one sequence: a test here sends one request twice (streamed and not) and compares the
    # thoughts, which needs the same logits both times. With more sequences the cache holds
    # more cells, and a one-row step over 512 cells or more takes llama.cpp's split-KV
    # attention, which rounds otherwise than the prompt's batch did (docs/batching.md;
    # llama-server's `cache_prompt` has the same caveat)
    srv = LiveServer(Settings(model_path=str(fam.model_path()), n_ctx=2048, parallel=1))
    yield request.param, fam, srv
    srv.stop()


def test_health_names_the_reasoning_markers(live_thinker):
    key, fam, srv = live_thinker
    h = httpx.get(srv.base + "/health").json()
    assert h["reasoning"]["format"] == fam.reasoning


@pytest.mark.truncation
@pytest.mark.parametrize("mode", ["required", "named", "schema"])
def test_truncation_gate_across_the_thought(live_thinker, mode):
    key, fam, srv = live_thinker
    oa, an = srv.openai(), srv.anthropic()
    for budget in BUDGETS:
        kw = {"response_format": RF} if mode == "schema" else {
            "tools": OA_TOOLS,
            "tool_choice": "required" if mode == "required"
            else {"type": "function", "function": {"name": "get_weather"}}}
        r = oa.chat.completions.create(model=srv.model_name, messages=[USER], max_tokens=budget,
                                       seed=budget, **kw)
        msg = r.choices[0].message
        thought = (msg.model_extra or {}).get("reasoning_content") or ""
        for marker in _markers(fam):
            assert marker not in (msg.content or "") and marker not in thought, marker
        if mode == "schema":
            jsonschema.validate(json.loads(msg.content), WEATHER)
        else:
            assert msg.tool_calls, (budget, msg)
            for c in msg.tool_calls:
                jsonschema.validate(json.loads(c.function.arguments), WEATHER)

        if mode != "schema":
            a = an.messages.create(model=srv.model_name, max_tokens=budget, tools=AN_TOOLS,
                                   messages=[USER],
                                   tool_choice={"type": "any"} if mode == "required"
                                   else {"type": "tool", "name": "get_weather"})
            uses = [b for b in a.content if b.type == "tool_use"]
            assert uses and all(jsonschema.validate(u.input, WEATHER) is None for u in uses)
            assert all(b.type != "text" or not any(x in b.text for x in _markers(fam))
                       for b in a.content)

        body = {"model": srv.model_name, "messages": [USER], "stream": False,
                "options": {"num_predict": budget, "seed": budget}}
        if mode == "schema":
            body["format"] = WEATHER
        else:
            body["tools"] = OA_TOOLS
            body["tool_choice"] = kw["tool_choice"]
        import ollama
        o = ollama.ChatResponse.model_validate(
            httpx.post(srv.base + "/api/chat", json=body, timeout=120).json())
        assert not any(x in (o.message.content or "") for x in _markers(fam))
        if mode == "schema":
            jsonschema.validate(json.loads(o.message.content), WEATHER)
        else:
            assert o.message.tool_calls
            for c in o.message.tool_calls:
                jsonschema.validate(dict(c.function.arguments), WEATHER)


def test_the_clients_read_the_reasoning_fields(live_thinker):
    """QwQ's generation prompt opens the thought, so every answer has one; Qwen3's leaves it
    to the model (this random one seldom opens it): its markers never reach the content."""
    key, fam, srv = live_thinker
    extra = {"llamay_reasoning_budget": 6}
    r = srv.openai().chat.completions.create(model=srv.model_name, messages=[USER],
                                             max_tokens=24, seed=1, extra_body=extra)
    msg = r.choices[0].message
    thought = (msg.model_extra or {}).get("reasoning_content")
    assert not any(x in (msg.content or "") for x in _markers(fam))
    if key not in OPENS_THE_THOUGHT:
        return
    assert thought and not any(x in thought for x in _markers(fam))
    chunks = srv.openai().chat.completions.create(
        model=srv.model_name, messages=[USER], max_tokens=24, seed=1, stream=True,
        extra_body=extra)
    streamed = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
                       for c in chunks if c.choices)
    assert streamed.strip() == thought
    resp = srv.openai().responses.create(model=srv.model_name, input="Weather in Paris?",
                                         max_output_tokens=24, extra_body=extra)
    items = [o.type for o in resp.output]
    assert items[0] == "reasoning" and resp.output[0].content[0].text
    a = srv.anthropic().messages.create(model=srv.model_name, max_tokens=24, messages=[USER],
                                        thinking={"type": "enabled", "budget_tokens": 6})
    assert a.content[0].type == "thinking" and a.content[0].thinking
    assert all(b.type != "text" or "</think>" not in b.text for b in a.content)
    with srv.anthropic().messages.stream(model=srv.model_name, max_tokens=24, messages=[USER],
                                         thinking={"type": "enabled",
                                                   "budget_tokens": 6}) as st:
        final = st.get_final_message()
    assert final.content[0].type == "thinking" and final.content[0].thinking
    o = srv.ollama().chat(model=srv.model_name, messages=[USER], think=True,
                          options={"num_predict": 24, "seed": 1})
    assert o.message.thinking and "</think>" not in (o.message.content or "")
    g = srv.ollama().generate(model=srv.model_name, prompt="Weather in Paris?", think=True,
                              options={"num_predict": 24, "seed": 1})
    assert g.thinking


def test_an_earlier_thought_goes_back_through_the_template(live_thinker):
    key, fam, srv = live_thinker
    messages = [USER, {"role": "assistant", "content": "Sunny.",
                       "reasoning_content": "EARLIER-THOUGHT"},
                {"role": "user", "content": "And tomorrow?"}]
    prompt = srv.state.model.render_chat(messages)
    # Qwen's templates drop the thoughts of turns before the last user message
    assert "EARLIER-THOUGHT" not in prompt and "Sunny." in prompt
    r = srv.openai().chat.completions.create(model=srv.model_name, messages=messages,
                                             max_tokens=8, seed=0)
    assert r.choices[0].finish_reason in ("stop", "length")


def test_thinking_off_writes_no_thought(live_thinker):
    key, fam, srv = live_thinker
    for seed in range(4):
        r = srv.openai().chat.completions.create(
            model=srv.model_name, messages=[USER], max_tokens=24, seed=seed,
            reasoning_effort="none", response_format=RF)
        assert not (r.choices[0].message.model_extra or {}).get("reasoning_content")
        jsonschema.validate(json.loads(r.choices[0].message.content), WEATHER)


def test_choice_logprobs_point_into_the_answer(live_thinker):
    key, fam, srv = live_thinker
    body = {"model": srv.model_name, "messages": [USER], "max_tokens": 48, "seed": 2,
            "response_format": RF, "llamay_choice_logprobs": True, "llamay_reasoning_budget": 5}
    r = httpx.post(srv.base + "/v1/chat/completions", json=body, timeout=120).json()
    doc = json.loads(r["choices"][0]["message"]["content"])
    units = [d for d in r["llamay_choice_logprobs"] if d["pointer"] == "/unit"]
    assert units and units[0]["chosen"] == doc["unit"]


def test_bad_reasoning_fields_are_400s(live_thinker):
    key, fam, srv = live_thinker
    for body in ({"reasoning_effort": "extreme"}, {"llamay_reasoning_budget": -1}):
        r = httpx.post(srv.base + "/v1/chat/completions",
                       json={"model": srv.model_name, "messages": [USER], **body}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] in body
    r = httpx.post(srv.base + "/v1/messages", json={
        "model": srv.model_name, "max_tokens": 8, "messages": [USER],
        "thinking": {"type": "enabled"}}, timeout=60)
    assert r.status_code == 400 and r.json()["type"] == "error"
    r = httpx.post(srv.base + "/api/chat", json={"model": srv.model_name, "messages": [USER],
                                                 "think": "very", "stream": False}, timeout=60)
    assert r.status_code == 400


def test_gpt_oss_takes_the_effort_from_the_request():
    text = material.chat_template("openai-gpt-oss-120b")
    switches = rz.template_switches(text, True, "high")
    assert switches == {"reasoning_effort": "high"}
    assert "Reasoning: high" in _render("openai-gpt-oss-120b", **switches)
    # its thought cannot be turned off: no effort below low reaches the template
    assert rz.template_switches(text, False, "none") == {}
