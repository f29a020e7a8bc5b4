# Design: the IR's classes and their fields' slot offsets, read once when the builder loads
# (the accessors that use them are inline in _build_ir.pxd).
"""The IR's expression classes and slot offsets for the automaton builder's passes
(cengine._build_inline, cengine._build_nfa); nothing public for Python."""
from . import ir as _ir

_Bytes = _ir.Bytes
_ByteSet = _ir.ByteSet
_CharSet = _ir.CharSet
_Seq = _ir.Seq
_Alt = _ir.Alt
_Repeat = _ir.Repeat
_Ref = _ir.Ref
_Nothing = _ir.Nothing
_Dfa = _ir.Dfa


cdef Py_ssize_t _slot_offset(cls, str name):
    d = cls.__dict__.get(name)
    if type(d) is not type(_ir.Ref.name):      # (a member descriptor)
        return -1
    return (<PyMemberDescrObject*><PyObject*>d).d_member.offset


_SEQ_ITEMS = _slot_offset(_Seq, "items")
_ALT_ITEMS = _slot_offset(_Alt, "items")
_REPEAT_ITEM = _slot_offset(_Repeat, "item")
_REPEAT_LO = _slot_offset(_Repeat, "lo")
_REPEAT_HI = _slot_offset(_Repeat, "hi")
_REF_NAME = _slot_offset(_Ref, "name")
_BYTES_DATA = _slot_offset(_Bytes, "data")
_BYTESET_RANGES = _slot_offset(_ByteSet, "ranges")
_CHARSET_RANGES = _slot_offset(_CharSet, "ranges")
