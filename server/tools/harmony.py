"""gpt-oss (OpenAI's harmony format): a call is a commentary message to `functions.NAME`.

The model's reply starts after the generation prompt `<|start|>assistant`. A call is one message
whose recipient is the tool, its content the arguments as JSON, ended by `<|call|>` (an
end-of-generation token, like `<|return|>`; `<|end|>`, which ends an analysis message, is not):

- recipient in the role header, as the template writes earlier calls:
  `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{...}<|call|>`
- recipient in the channel header, as the model mostly writes them:
  `<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}`

The content type after the header is ` json`, ` <|constrain|>json` or absent. One call per
message, and the template reads one per assistant turn (`message.tool_calls[0]`): one call per
output. Under tool_choice auto the model may first write an analysis message
(`<|channel|>analysis<|message|>...<|end|><|start|>assistant`) and then a call, or a `final`
answer; the lazy trigger is ` to=functions.`, which ends both call headers and nothing else
(an analysis or final message has no recipient), so it fires on a call only. The forced
grammar has both headers; after the lazy trigger the rest of either header follows (the part
before the trigger was free text). `<|channel|>`, `<|message|>`, `<|constrain|>` are written
as the vocabulary's special tokens. The tool name is in the header, outside the JSON: no
`CALL_POINTERS`.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import cengine

from .base import Dialect, leading_json, offered_call
from .common import ToolSpec

CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
RECIPIENT = " to=functions."
COMMENTARY = "commentary"
# the call's opening with the recipient in the channel header (the reader's longer spelling)
CHANNEL_OPEN = CHANNEL + COMMENTARY + RECIPIENT
CONTENT_TYPES = ("", " json", " " + CONSTRAIN + "json")


class Harmony(Dialect):
    name = "harmony"
    # the recipient in the role header (as the template writes it) or the channel header
    NAME_MARKS = (RECIPIENT, (CHANNEL, " ", MESSAGE))
    TRIGGER = RECIPIENT
    DETECT_ALL, DETECT_SCORE = (CHANNEL, MESSAGE, "to="), 40
    family = "gpt-oss (harmony format)"
    CALL_POINTERS = None
    parallel_calls = False

    @property
    def trigger_spellings(self):
        return (RECIPIENT, CHANNEL_OPEN)

    def call_text(self, name: Any, arguments: Any) -> str:
        """What the model writes after `<|start|>assistant` for a call, the recipient in the
        role header as the template writes it (`<|call|>` ends the generation)."""
        return (RECIPIENT + str(name) + CHANNEL + COMMENTARY + " json" + MESSAGE
                + json.dumps(arguments, ensure_ascii=False))

    def tool_instructions(self) -> str:
        return ("To call a tool, send a message to it on the commentary channel, its arguments "
                "as a JSON object as its JSON Schema asks:\n"
                "<|start|>assistant<|channel|>commentary to=functions.tool_name "
                '<|constrain|>json<|message|>{"argument": "value"}<|call|>')

    # --- grammar ------------------------------------------------------------------------------
    def _content_type(self) -> cengine.Part:
        return cengine.OneOf(*[cengine.Concat(*[self.tok(p) if p == CONSTRAIN else p
                                                for p in _split(c)]) for c in CONTENT_TYPES])

    def _channel(self) -> cengine.Part:
        return cengine.Concat(self.tok(CHANNEL), COMMENTARY)

    def _calls(self, tools: Sequence[ToolSpec], header_rest: cengine.Part) -> cengine.Part:
        """NAME header_rest <|message|> ARGS, one alternative per tool."""
        return cengine.OneOf(*[cengine.Concat(t.name, header_rest, self.tok(MESSAGE),
                                              cengine.JsonSchema(t.parameters))
                               for t in tools])

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        """After the lazy trigger: the rest of a role-header call (channel, content type) or
        of a channel-header one (content type); nothing after the arguments (the model ends
        the message with <|call|>, which ends the generation)."""
        rest = cengine.OneOf(cengine.Concat(self._channel(), self._content_type()),
                             self._content_type())
        return cengine.TriggeredRegion(RECIPIENT, self._calls(tools, rest), "")

    def forced_calls(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.Part:
        """The whole output is one call, with either header."""
        role = cengine.Concat(RECIPIENT, self._calls(
            tools, cengine.Concat(self._channel(), self._content_type())))
        channel = cengine.Concat(self._channel(), RECIPIENT,
                                 self._calls(tools, self._content_type()))
        return cengine.OneOf(role, channel)

    # --- reader -------------------------------------------------------------------------------
    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        """NAME, the header's rest, <|message|>, the arguments: the region closes with them."""
        at = text.find(MESSAGE)
        if at < 0:
            return [], 0, False
        header = text[:at]
        cut = min([i for i in (header.find(CHANNEL), header.find(" ")) if i >= 0],
                  default=len(header))
        name, rest = header[:cut], header[cut:]
        if rest.startswith(CHANNEL + COMMENTARY):
            rest = rest[len(CHANNEL + COMMENTARY):]
        if rest not in CONTENT_TYPES:
            return [None], at + len(MESSAGE), True
        got = leading_json(text, at + len(MESSAGE))
        if got is None:
            return [], 0, False
        args, end = got
        return [offered_call(name, args, tools)], end, True


def _split(content_type: str):
    """' <|constrain|>json' -> (' ', '<|constrain|>', 'json'), so the token is a Special."""
    if CONSTRAIN not in content_type:
        return (content_type,) if content_type else ("",)
    before, _, after = content_type.partition(CONSTRAIN)
    return tuple(p for p in (before, CONSTRAIN, after) if p)


DIALECT = Harmony()
