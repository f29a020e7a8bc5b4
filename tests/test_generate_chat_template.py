"""Chat prompts from GGUF Jinja templates: globals, sandbox, tools with and without support."""
from __future__ import annotations

import json

import pytest

from server.runtime.chat_template import (FALLBACK_TEMPLATE, ChatTemplateError, render_chat,
                                          template_knows_tools)
from server.tools import hermes

CHATML_NO_TOOLS = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                            "parameters": {"type": "object", "properties": {
                                                "city": {"type": "string"}}}}}]


@pytest.mark.parametrize("template, messages, expected", [
    (None, [{"role": "user", "content": "hi"}],
     "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"),
    ("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
     "{{ eos_token }}",
     [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
     "<s>[system]S[user]U</s>"),
    # list-of-parts content is flattened to text
    (None, [{"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "text", "text": "b"}]}],
     "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n"),
    ("{% for m in messages %}{{ m.content | tojson }}{% endfor %}",
     [{"role": "user", "content": "héllo \"q\""}], '"héllo \\"q\\""'),
])
def test_render(template, messages, expected):
    assert render_chat(template, messages, bos_token="<s>", eos_token="</s>") == expected


def test_generation_prompt_is_optional():
    msgs = [{"role": "user", "content": "hi"}]
    assert not render_chat(None, msgs, add_generation_prompt=False).endswith("assistant\n")


def test_strftime_now_is_available():
    out = render_chat("{{ strftime_now('%Y') }}", [])
    assert out.isdigit() and len(out) == 4


def test_raise_exception_becomes_a_typed_error():
    tmpl = ("{% if messages[0].role != 'user' %}{{ raise_exception('first must be user') }}"
            "{% endif %}")
    with pytest.raises(ChatTemplateError, match="first must be user"):
        render_chat(tmpl, [{"role": "assistant", "content": "x"}])


@pytest.mark.parametrize("template", [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",       # the sandbox refuses this
    "{% for %}",                                            # does not compile
    "{{ messages[5].content.upper() }}",                    # fails while rendering
])
def test_broken_or_unsafe_templates_raise_chat_template_error(template):
    with pytest.raises(ChatTemplateError):
        render_chat(template, [{"role": "user", "content": "x"}])


def test_a_template_may_change_lists_but_not_the_callers_messages():
    """Kimi K2's templates queue call ids in a namespace's list; what a template changes is
    its own copy."""
    tmpl = ("{%- set q = namespace(ids=[]) -%}{%- for m in messages -%}"
            "{%- set _ = q.ids.append(m.role) -%}{%- set _ = m.tool_calls.append(1) -%}"
            "{%- endfor -%}{{ q.ids | join(',') }} {{ tools[0].pop('name') }}")
    msgs = [{"role": "user", "content": "x", "tool_calls": []}]
    tools = [{"name": "t"}]
    assert render_chat(tmpl, msgs, tools=tools) == "user t"
    assert msgs == [{"role": "user", "content": "x", "tool_calls": []}]
    assert tools == [{"name": "t"}]


def test_template_without_tools_gets_a_hermes_system_block():
    assert not template_knows_tools(CHATML_NO_TOOLS)
    out = render_chat(CHATML_NO_TOOLS, [{"role": "user", "content": "weather?"}], tools=TOOLS,
                      tool_format=hermes)
    system = out.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\n")
    assert "<tool_call>" in system and "</tool_call>" in system
    listed = [json.loads(line)
              for line in system.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()]
    assert listed == [TOOLS[0]["function"]]


def test_template_without_tools_keeps_an_existing_system_message_first():
    out = render_chat(CHATML_NO_TOOLS, [{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": "x"}], tools=TOOLS,
                      tool_format=hermes)
    assert out.startswith("<|im_start|>system\nBe brief.\n\n")
    assert out.count("<|im_start|>system") == 1


def test_tool_calls_and_results_become_text_turns_without_tool_support():
    msgs = [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "-3 C"},
    ]
    out = render_chat(CHATML_NO_TOOLS, msgs, tools=TOOLS, tool_format=hermes)
    call = out.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    assert call.startswith("<tool_call>\n") and call.endswith("\n</tool_call>")
    assert json.loads(call[len("<tool_call>\n"):-len("\n</tool_call>")]) == \
        {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert "<|im_start|>user\n<tool_response>\n-3 C\n</tool_response><|im_end|>" in out


@pytest.mark.parametrize("messages, tools", [
    ([{"role": "user", "content": "weather?"}], TOOLS),
    ([{"role": "tool", "tool_call_id": "c1", "content": "-3 C"}], None),
])
def test_tools_without_template_support_or_format_are_refused(messages, tools):
    # nowhere to write the tools: refused, never dropped silently
    with pytest.raises(ChatTemplateError, match="no tool format"):
        render_chat(CHATML_NO_TOOLS, messages, tools=tools)


def test_template_that_knows_tools_receives_them():
    tmpl = ("{% if tools %}{% for t in tools %}TOOL:{{ t.function.name }};{% endfor %}{% endif %}"
            "{% for m in messages %}{{ m.role }}:{{ m.content }}"
            "{% for c in m.tool_calls or [] %}CALL:{{ c.function.arguments.city }}{% endfor %};"
            "{% endfor %}")
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}]
    # arguments given as JSON text reach the template as an object
    assert render_chat(tmpl, msgs, tools=TOOLS) == "TOOL:get_weather;user:q;assistant:CALL:Oslo;"


def test_fallback_is_chatml():
    assert "<|im_start|>" in FALLBACK_TEMPLATE
