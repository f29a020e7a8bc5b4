"""Truncation gate: a tool call cut off by max_tokens at any budget is still a valid document.

On the random fixture model and on the default model (SmolLM2-135M-Instruct), at budgets of
1 to 64 tokens: every output parses and validates against the schema; an output that had not
reached a complete document within the budget ends with the closer and reason "length".
"""
from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import cengine
from server.runtime.default_model import default_model_path
from server.runtime.model import Model
from server.runtime.types import FinishEvent, SamplingParams, TokenEvent

pytestmark = pytest.mark.truncation

BUDGETS = [1, 2, 3, 5, 8, 16, 64]

TOOL_CALL = {
    "type": "object",
    "properties": {
        "name": {"const": "get_weather"},
        "arguments": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "number"},
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "hours": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["city", "days", "unit", "hours"],
        },
    },
    "required": ["name", "arguments"],
}
QUESTION = ("What will the weather be in Paris over the next 3 days, in celsius, at 9 and 15 "
            "o'clock? Answer with a get_weather tool call as JSON.")


@pytest.fixture(scope="module")
def grammar():
    return cengine.compile_json_schema(TOOL_CALL)


@pytest.fixture(scope="module", params=["fixture", "smollm2"])
def model(request, fixture_model_path):
    path = fixture_model_path if request.param == "fixture" else default_model_path()
    m = Model(str(path), n_ctx=1024)
    yield m
    m.close()


@pytest.mark.parametrize("budget", BUDGETS)
def test_every_budget_gives_a_valid_tool_call(model, grammar, budget):
    prompt = model.render_chat([{"role": "user", "content": QUESTION}])
    events = list(model.generate(prompt, grammar=grammar,
                                 params=SamplingParams(max_tokens=budget, temperature=0.7,
                                                       seed=1000 + budget)))
    fin = events[-1]
    assert isinstance(fin, FinishEvent)
    toks = [e for e in events[:-1] if isinstance(e, TokenEvent)]
    out = b"".join(e.text for e in toks)

    doc = json.loads(out.decode("utf-8"))
    jsonschema.validate(doc, TOOL_CALL)
    assert doc["name"] == "get_weather"

    assert fin.completion_tokens <= budget
    body = b"".join(e.text for e in toks if e.token_id >= 0)    # without the closer
    replay = grammar.matcher()
    assert replay.accept_bytes(body)
    if not replay.is_accepting():
        # below completion: closed by the closer, reason "length", budget used up
        assert fin.reason == "length"
        assert fin.closer and fin.closer == replay.completion()
        assert out == body + fin.closer
        assert fin.completion_tokens == budget
    else:
        assert fin.closer == b"" and out == body
        assert fin.reason in ("stop", "length")


def test_one_token_cannot_complete_the_call(model, grammar):
    # the precondition that makes budget 1 a real truncation on both vocabularies: no token
    # the grammar allows first is as long as the shortest complete call
    shortest = grammar.matcher().completion()
    mask = np.zeros(cengine.mask_words(model.vocab.size), np.int32)
    grammar.matcher(model.vocab).fill_mask(mask)
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[:model.vocab.size]
    first = [model.vocab.tokens[i] for i in np.flatnonzero(bits)]
    assert first and max(len(t) for t in first) < len(shortest)
    events = list(model.generate(model.render_chat([{"role": "user", "content": QUESTION}]),
                                 grammar=grammar, params=SamplingParams(max_tokens=1, seed=0)))
    assert events[-1].reason == "length"
