"""The constraints the engine adapters' tests (SGLang, vLLM) decode under, and the checks of
their documents: one table, so both engines are held to the same documents."""
from __future__ import annotations

import json
import re

import jsonschema

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                                           "days": {"type": "integer", "minimum": 1,
                                                    "maximum": 30}},
          "required": ["city", "days"], "additionalProperties": False}
REGEX = "[a-z]{2,5}-[0-9]{1,3}"
GBNF = 'root ::= "yes" | "no" | "maybe " [0-9]'


def schema_ok(text: str) -> bool:
    jsonschema.validate(json.loads(text), SCHEMA)
    return True


def regex_ok(text: str) -> bool:
    return re.fullmatch(REGEX, text) is not None


def gbnf_ok(text: str) -> bool:
    return re.fullmatch(r"yes|no|maybe [0-9]", text) is not None
