"""Compile time of a real (uncached) compile."""
import json

from . import ROOT


class Compile:
    timeout = 120

    def setup(self):
        d = json.loads((ROOT / "testdata" / "bench_schemas" / "tools" / "schedule_meeting.json")
                       .read_text(encoding="utf-8"))
        self.tool = d["parameters"]
        from tests.material import gbnf_grammars
        self.json_gbnf = gbnf_grammars()["json"]
        from cengine.gbnf import parse_gbnf
        from cengine.schema import schema_to_ir
        self.tool_ir = schema_to_ir(self.tool, closed_objects=False)
        self.json_ir = parse_gbnf(self.json_gbnf)

    def time_compile_tool_schema(self):
        import cengine
        cengine.CACHE.clear()
        cengine.compile_json_schema(self.tool, closed_objects=False)

    def time_schema_to_ir(self):
        # the JSON Schema front end alone
        from cengine.schema import schema_to_ir
        schema_to_ir(self.tool, closed_objects=False)

    def time_build_automaton_tool_schema(self):
        # the automaton builder alone (cengine/_build.pyx), on the tool schema's IR
        from cengine import automaton
        automaton.build(self.tool_ir)

    def time_build_automaton_gbnf_json(self):
        from cengine import automaton
        automaton.build(self.json_ir)

    def time_compile_gbnf_json(self):
        import cengine
        cengine.CACHE.clear()
        cengine.compile_gbnf(self.json_gbnf)
