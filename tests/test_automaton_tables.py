"""The automaton's tables are declared once (Automaton's fields with their dtypes): the
builder fills exactly those, with those dtypes, and the C struct the kernels read (Prog in
cengine/_automaton.pxd) follows automaton.KERNEL_TABLES; _matcher refuses to import when it
drifts, which check_program_layout shows on drifted lists."""
import dataclasses

import numpy as np
import pytest

import cengine
from cengine import _matcher, automaton

KERNEL = list(automaton.KERNEL_TABLES)


def test_tables_are_the_array_fields_of_automaton():
    arrays = [f.name for f in dataclasses.fields(automaton.Automaton) if f.type == "np.ndarray"]
    assert [name for name, _ in automaton.TABLES] == arrays
    assert set(KERNEL) <= set(automaton.TABLES)


def test_builder_fills_every_table_with_its_dtype():
    a = cengine.compile_json_schema({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string", "maxLength": 40}}}}).automaton
    for name, dtype in automaton.TABLES:
        assert getattr(a, name).dtype == dtype, name
    assert a.nbytes() == sum(getattr(a, name).nbytes for name, _ in automaton.TABLES)


def test_program_holds_the_kernel_tables():
    g = cengine.compile_regex("ab+c")
    prog = _matcher.program_of(g)
    assert prog is _matcher.program_of(g)
    m = g.matcher()
    assert m.accept_bytes(b"abbb") and not m.is_accepting() and m.completion() == b"c"


def test_constants_are_the_pxd_ones():
    # one definition (cengine/_automaton.pxd), read by Python through _build
    from cengine import _build
    assert (automaton.FLAG_FINAL, automaton.FLAG_WS, automaton.FLAG_CONTAINER, automaton.INF) \
        == (_build.FLAG_FINAL, _build.FLAG_WS, _build.FLAG_CONTAINER, _build.INF) \
        == (1, 2, 4, 1 << 40)


def test_layout_check_accepts_the_declared_tables():
    _matcher.check_program_layout(automaton.KERNEL_TABLES)


DRIFTS = {
    "a table Prog lacks": KERNEL + [("extra_table", np.dtype(np.int32))],
    "a table Prog has that the list lacks": KERNEL[:-1],
    "two tables swapped": [KERNEL[1], KERNEL[0]] + KERNEL[2:],
    "another element size": [(KERNEL[0][0], np.dtype(np.int64))] + KERNEL[1:],
    "a renamed table": [("edge_offsets", KERNEL[0][1])] + KERNEL[1:],
}


@pytest.mark.parametrize("name", sorted(DRIFTS))
def test_layout_check_refuses_drift(name):
    with pytest.raises(ImportError, match="does not follow Automaton"):
        _matcher.check_program_layout(DRIFTS[name])
