"""cengine.contrib.structural_tag: xgrammar's structural tags (both spellings) onto cengine's
composition parts. Each format against documents it must accept and refuse, and each format
or field cengine cannot enforce refused with its name as the CompileError's keyword."""
from __future__ import annotations

import json

import pytest

import cengine
from cengine import CompileError
from cengine.contrib.structural_tag import compile_structural_tag, structural_tag_part

INT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
       "additionalProperties": False}


def tag(fmt):
    return {"type": "structural_tag", "format": fmt}


def call(end="</c>"):
    return {"type": "tag", "begin": "<c>", "content": {"type": "json_schema", "json_schema": INT},
            "end": end}


CASES = [      # (spec, accepted, refused)
    (tag({"type": "const_string", "value": "hi"}), ["hi"], ["", "hi!"]),
    (tag({"type": "json_schema", "json_schema": INT}), ['{"n":1}', '{ "n" : 2 }'],
     ['{"n":"x"}', '{}']),
    (tag({"type": "json_schema", "json_schema": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
        "any_order": True}), ['{"b":1,"a":2}', '{"a":1,"b":2}'], ['{"a":1}']),
    (tag({"type": "regex", "pattern": "[a-c]{2}"}), ["ab"], ["abc", "d"]),
    (tag({"type": "grammar", "grammar": 'root ::= "x" [0-9]'}), ["x1"], ["x", "y1"]),
    (tag({"type": "any_text"}), ["", "anything at all"], []),
    (tag({"type": "sequence", "elements": [{"type": "const_string", "value": "a"},
                                           {"type": "regex", "pattern": "[0-9]"}]}),
     ["a1"], ["a", "1"]),
    (tag({"type": "or", "elements": [{"type": "const_string", "value": "a"},
                                     {"type": "const_string", "value": "b"}]}), ["a", "b"],
     ["ab"]),
    (tag(call()), ['<c>{"n":1}</c>'], ['<c>{"n":1}', '{"n":1}</c>']),
    (tag(call(["</c>", "</d>"])), ['<c>{"n":1}</c>', '<c>{"n":1}</d>'], ['<c>{"n":1}</e>']),
    (tag({"type": "tag", "begin": "<t>", "content": {"type": "any_text"}, "end": "</t>"}),
     ["<t>a < b</t>"], ["<t>a</t>b</t>"]),
    (tag({"type": "triggered_tags", "triggers": ["<c>"], "tags": [call()]}),
     ["", "text", 'x <c>{"n":1}</c> y'], ["x <c>nope</c>"]),
    (tag({"type": "triggered_tags", "triggers": ["<c>"], "tags": [call()],
          "at_least_one": True, "stop_after_first": True}),
     ['x <c>{"n":1}</c>'], ["x", 'x <c>{"n":1}</c> y']),
    (tag({"type": "tags_with_separator", "tags": [call()], "separator": ","}),
     ["", '<c>{"n":1}</c>,<c>{"n":2}</c>'], ['<c>{"n":1}</c><c>{"n":2}</c>']),
    (tag({"type": "tags_with_separator", "tags": [call()], "separator": ",",
          "at_least_one": True, "stop_after_first": True}),
     ['<c>{"n":1}</c>'], ["", '<c>{"n":1}</c>,<c>{"n":2}</c>']),
    (tag({"type": "optional", "content": {"type": "const_string", "value": "a"}}), ["", "a"],
     ["aa"]),
    (tag({"type": "plus", "content": {"type": "const_string", "value": "a"}}), ["a", "aaa"],
     [""]),
    (tag({"type": "star", "content": {"type": "const_string", "value": "a"}}), ["", "aa"],
     ["b"]),
    (tag({"type": "repeat", "min": 2, "max": 3, "content": {"type": "const_string",
                                                            "value": "a"}}),
     ["aa", "aaa"], ["a", "aaaa"]),
    (tag({"type": "repeat", "min": 1, "max": -1, "content": {"type": "const_string",
                                                             "value": "a"}}),
     ["a", "aaaaa"], [""]),
    ({"type": "structural_tag", "triggers": ["<f="],        # the legacy spelling
      "structures": [{"begin": "<f=a>", "schema": INT, "end": "</f>"}]},
     ["", 'ok <f=a>{"n":1}</f> and <f=a>{"n":2}</f>'], ["<f=b>", '<f=a>{"n":"1"}</f>']),
]


@pytest.mark.parametrize("spec, good, bad", CASES)
def test_structural_tag_language(spec, good, bad):
    g = compile_structural_tag(json.dumps(spec))
    assert compile_structural_tag(spec) is g              # JSON text or dict, one grammar
    for text in good:
        m = g.matcher()
        assert m.accept_bytes(text.encode()) and m.is_accepting(), text
    for text in bad:
        m = g.matcher()
        assert not (m.accept_bytes(text.encode()) and m.is_accepting()), text


def test_token_tags_are_special_tokens():
    part = structural_tag_part(tag({"type": "tag", "begin": {"type": "token",
                                                             "token": "<|call|>"},
                                    "content": {"type": "const_string", "value": "x"},
                                    "end": "."}))
    assert part == cengine.Concat(cengine.Special("<|call|>"), cengine.Text("x"),
                                  cengine.Text("."))


@pytest.mark.parametrize("spec, keyword", [
    (tag({"type": "json_schema", "json_schema": INT, "style": "qwen_xml"}), "style"),
    (tag({"type": "json_schema", "json_schema": INT, "excludes": ["x"]}), "excludes"),
    (tag({"type": "any_text", "max_tokens": 5}), "max_tokens"),
    (tag({"type": "any_text", "excludes": ["</t>"]}), "excludes"),
    (tag({"type": "dispatch", "rules": []}), "dispatch"),
    (tag({"type": "token_triggered_tags", "trigger_tokens": [1], "tags": []}),
     "token_triggered_tags"),
    (tag({"type": "qwen_xml_parameter", "json_schema": INT}), "qwen_xml_parameter"),
    (tag({"type": "any_tokens"}), "any_tokens"),
    (tag({"type": "tag", "begin": {"type": "token", "token": 7}, "content": {
        "type": "any_text"}, "end": "x"}), "token"),
    (tag({"type": "nonsense"}), "nonsense"),
    (tag({"type": "sequence", "elements": []}), "elements"),
    (tag({"type": "const_string"}), "value"),
    ({"type": "json_schema"}, "type"),
])
def test_what_cannot_be_enforced_is_refused_by_name(spec, keyword):
    with pytest.raises(CompileError) as e:
        compile_structural_tag(spec)
    assert e.value.keyword == keyword


@pytest.mark.parametrize("spec", ["{not json", "[1, 2]"])
def test_not_a_structural_tag(spec):
    with pytest.raises(CompileError):
        compile_structural_tag(spec)


def test_importing_the_engine_free_contrib_modules_loads_no_engine():
    """cengine, cengine.contrib, its structural-tag reader and shared helpers import no
    torch, transformers or engine (the default test environment has none of them either,
    so this runs where the adapters' own tests are skipped)."""
    import subprocess
    import sys
    code = ("import sys, cengine, cengine.contrib, cengine.contrib.structural_tag, "
            "cengine.contrib._tokens; print(sorted(m for m in ('torch', 'transformers', "
            "'sglang', 'vllm', 'xgrammar') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
