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

    def time_compile_tool_schema(self):
        import cengine
        cengine.CACHE.clear()
        cengine.compile_json_schema(self.tool, closed_objects=False)

    def time_compile_gbnf_json(self):
        import cengine
        cengine.CACHE.clear()
        cengine.compile_gbnf(self.json_gbnf)
