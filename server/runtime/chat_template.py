"""Chat prompts from the GGUF's own Jinja chat template (`tokenizer.chat_template`).

Templates come from model files, so they run in jinja2's sandbox. Lists and dicts may be
changed there (Kimi K2's templates queue call ids with `namespace(ids=[]).ids.append`): every
template gets its own deep copy of the messages and tools, so nothing it changes outlives the
rendering. They are written for Hugging Face's renderer, so the same globals are provided:
raise_exception, strftime_now, bos_token, eos_token, a `tojson` that keeps non-ASCII text, and
loop controls.

Tools: when the template itself handles `tools` it gets them. Otherwise the caller's tool
format (a dialect of server.tools, e.g. Hermes) rewrites the tool list, assistant tool calls
and tool results as plain turns (many templates refuse a "tool" role); this module knows no
dialect.
"""
from __future__ import annotations

import copy
import datetime
import json
from functools import lru_cache
from typing import Any, Dict, Iterator, List, Optional

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from .types import ToolPromptFormat

# Used when a model file carries no template (e.g. the random test model): ChatML.
FALLBACK_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

class ChatTemplateError(ValueError):
    """The template is broken or refused the conversation (raise_exception)."""


def _raise_exception(message: str):
    raise ChatTemplateError(f"chat template refused the conversation: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


def _listed(value: Any) -> Any:
    """What `tojson` writes for a value JSON has no type for: a lazy sequence (jinja's `map`
    and `select` filters give generators, e.g. `tools | map(attribute='function') | tojson`)
    as the list it yields."""
    if isinstance(value, Iterator):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _tojson(value: Any, indent: Optional[int] = None, separators=None, sort_keys: bool = False,
            ensure_ascii: bool = False) -> str:
    return json.dumps(value, indent=indent, separators=separators, sort_keys=sort_keys,
                      ensure_ascii=ensure_ascii, default=_listed)


@lru_cache(maxsize=16)
def _compile(source: str) -> jinja2.Template:
    env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                               extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    try:
        return env.from_string(source)
    except jinja2.TemplateError as e:
        raise ChatTemplateError(f"chat template does not compile: {e}") from None


def template_knows_tools(source: str) -> bool:
    return "tools" in source


def _text_content(content: Any) -> str:
    """OpenAI content may be a list of parts; templates expect a string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(p.get("text", "")))
        return "".join(parts)
    return str(content)


def _arguments_object(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _reads_system_tools(source: str) -> bool:
    """The template takes the tool list from the system message's `tools` field, as JSON
    text (Phi-4-mini, Phi-4-multimodal: `'<|tool|>' + message['tools'] + '<|/tool|>'`)."""
    return "message['tools']" in source or 'message["tools"]' in source


def _system_tools(msgs: List[dict], tools: List[dict]) -> List[dict]:
    """The tool list (the functions, as a JSON list) in the system message's `tools` field,
    an empty system message first where there is none."""
    listed = json.dumps([t.get("function", t) for t in tools], ensure_ascii=False)
    if msgs and msgs[0].get("role") == "system":
        return [{**msgs[0], "tools": listed}] + msgs[1:]
    return [{"role": "system", "content": "", "tools": listed}] + msgs


def uses_tools(messages: List[dict], tools: Optional[List[dict]]) -> bool:
    return bool(tools) or any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


_THOUGHT_KEYS = ("reasoning_content", "thinking", "reasoning")


def plain_messages(messages: List[dict]) -> List[dict]:
    """Messages as templates (and tool formats) take them: content as text, tool-call
    arguments as objects."""
    out = []
    for m in messages:
        m2 = dict(m)
        m2["content"] = _text_content(m.get("content"))
        thought = next((m.get(k) for k in _THOUGHT_KEYS if m.get(k)), None)
        if thought and m.get("role") == "assistant":
            # an earlier turn's thought, under every name templates read it by (Qwen3:
            # reasoning_content, gpt-oss: thinking, Gemma 4: reasoning); most drop it
            for k in _THOUGHT_KEYS:
                m2[k] = _text_content(thought)
        calls = m2.get("tool_calls")
        if calls:
            # templates that know tools expect arguments as an object, not JSON text
            m2["tool_calls"] = [
                {**c, "function": {**c.get("function", {}), "arguments": _arguments_object(
                    c.get("function", {}).get("arguments", {}))}}
                for c in calls]
        out.append(m2)
    return out


def _calls_as_text(msgs: List[dict], tool_format: Any) -> List[dict]:
    out = []
    for m in msgs:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = [tool_format.call_text(c.get("function", {}).get("name"),
                                           c.get("function", {}).get("arguments", {}))
                     for c in m["tool_calls"]]
            text = m.get("content") or ""
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            m["content"] = (text + "\n" if text else "") + "\n".join(calls)
        out.append(m)
    return out


def render_chat(template: Optional[str], messages: List[dict], *,
                tools: Optional[List[dict]] = None, tool_format: Optional[ToolPromptFormat] = None,
                add_generation_prompt: bool = True, bos_token: str = "",
                eos_token: str = "", template_vars: Optional[dict] = None) -> str:
    """The prompt text for `messages` (OpenAI-shaped dicts) under `template` (None: ChatML).
    When tools are in play and the template does not handle them, `tool_format` writes them as
    text; without one that is a ChatTemplateError (dropping the tools silently would be a lie)."""
    source = template or FALLBACK_TEMPLATE
    tmpl = _compile(source)
    # the template may change what it is given (see the module's doc): its own copies
    msgs = copy.deepcopy(plain_messages(messages))
    tools = copy.deepcopy(tools)
    extra: Dict[str, Any] = dict(template_vars or {})
    if uses_tools(messages, tools):
        if template_knows_tools(source):
            if tools:
                extra["tools"] = tools
                if _reads_system_tools(source):
                    msgs = _system_tools(msgs, tools)
            if "tool_calls" not in source and hasattr(tool_format, "call_text"):
                # a template that writes an assistant turn's text alone (Granite 3.3,
                # Phi-4-mini) would drop earlier calls: they go into that text, in the form
                # the model is held to
                msgs = _calls_as_text(msgs, tool_format)
        elif tool_format is not None:
            msgs = tool_format.plain_messages(msgs, tools)
        else:
            raise ChatTemplateError("the chat template does not handle tools and no tool format "
                                    "was given to write them as text")
    try:
        return tmpl.render(messages=msgs, add_generation_prompt=add_generation_prompt,
                           bos_token=bos_token, eos_token=eos_token, **extra)
    except ChatTemplateError:
        raise
    except jinja2.exceptions.SecurityError as e:
        raise ChatTemplateError(f"chat template did something unsafe: {e}") from None
    except (jinja2.TemplateError, TypeError, KeyError, AttributeError) as e:
        raise ChatTemplateError(f"chat template failed: {e}") from None
