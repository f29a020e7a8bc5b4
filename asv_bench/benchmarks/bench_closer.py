"""The closer: completion() of a tool-call document cut at every few bytes.

Target (issue: engine core): a typical tool schema closes in well under 100 us.
"""
import json

from . import ROOT  # noqa: F401  (sets sys.path)

import cengine

TOOL = {
    "type": "object",
    "properties": {
        "name": {"const": "create_event"},
        "arguments": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "start": {"type": "string"},
                "attendees": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "reminder": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "visibility": {"enum": ["public", "private"]},
                "location": {"type": "object", "properties": {"room": {"type": "string"},
                                                               "floor": {"type": "integer"}},
                             "required": ["room", "floor"]},
            },
            "required": ["title", "start", "attendees", "visibility", "location"],
        },
    },
    "required": ["name", "arguments"],
}
DOC = json.dumps({"name": "create_event", "arguments": {
    "title": "Design review", "start": "2026-12-01T10:00", "attendees": ["ana", "bo"],
    "reminder": 15, "visibility": "private", "location": {"room": "4.12", "floor": 4}}}).encode()


class Closer:
    params = [0.1, 0.3, 0.5, 0.7, 0.9]
    param_names = ["cut"]

    def setup(self, cut):
        g = cengine.compile_json_schema(TOOL)
        self.m = g.matcher()
        assert self.m.accept_bytes(DOC[: int(len(DOC) * cut)])

    def time_completion(self, cut):
        self.m.completion()
