"""The labelled datasets in testdata/calibration: valid for collect, reproducible from their
script, and labelled right (every request comes from a template of its label only)."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import cengine
from calibrate.collect import load_dataset

HERE = Path(__file__).resolve().parent.parent / "testdata" / "calibration"


def _script():
    spec = importlib.util.spec_from_file_location("make_datasets", HERE / "make_datasets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _script()


def _patterns(templates):
    # a template as a regex: the fixed text literally, each {slot} as any non-empty text
    return {label: [re.compile("^" + re.sub(r"\\\{\w+\\\}", ".+?", re.escape(t)) + "$") for t in ts]
            for label, ts in templates.items()}


def _labels_matching(text, patterns):
    return {label for label, ps in patterns.items() if any(p.match(text) for p in ps)}


def test_the_files_are_what_the_script_writes(tmp_path):
    MAKE.main(tmp_path)
    for name in ("tool-routing.jsonl", "intents.jsonl"):
        assert (tmp_path / name).read_bytes() == (HERE / name).read_bytes(), name


def test_tool_routing_set():
    items = load_dataset(HERE / "tool-routing.jsonl")
    assert len(items) >= 200
    patterns = _patterns(MAKE.TOOL_TEMPLATES)
    for it in items:
        names = [t["function"]["name"] for t in it.tools]
        assert 4 <= len(names) <= 6 and len(set(names)) == len(names)
        assert it.pointer == "tool" and it.label in names
        text = it.messages[-1]["content"]
        assert _labels_matching(text, patterns) == {it.label}, text
    assert {it.label for it in items} == set(MAKE.TOOLS)
    assert len({it.messages[-1]["content"] for it in items}) == len(items)


def test_intent_set():
    items = load_dataset(HERE / "intents.jsonl")
    assert len(items) >= 200
    patterns = _patterns(MAKE.INTENT_TEMPLATES)
    grammar = cengine.compile_json_schema(MAKE.INTENT_SCHEMA)
    for it in items:
        assert it.pointer == "/intent" and it.schema == MAKE.INTENT_SCHEMA
        assert it.label in MAKE.INTENTS
        text = it.messages[-1]["content"]
        for suffix in MAKE.URGENT_SUFFIX:
            text = text[:-len(suffix)] if text.endswith(suffix) else text
        assert _labels_matching(text, patterns) == {it.label}, text
        # the gold answer is a legal document of the request's schema
        m = grammar.matcher()
        doc = f'{{"intent":"{it.label}","urgent":{"true" if it.extra["urgent"] else "false"}}}'
        assert m.accept_bytes(doc.encode()) and m.is_accepting()
    assert {it.label for it in items} == set(MAKE.INTENTS)


@pytest.mark.parametrize("name", ["tool-routing.jsonl", "intents.jsonl"])
def test_ids_are_unique_and_ordered(name):
    ids = [it.id for it in load_dataset(HERE / name)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
