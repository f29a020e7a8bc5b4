# The IR's expressions as the builder's passes read and make them (_build_inline,
# _build_nfa): the classes, read once into C globals, and each field read from, or written
# to, its slot. The IR's expressions are slotted dataclasses: the passes read their fields
# straight from the slots and fill the slots of the nodes they make (what the generated
# __init__ does, without a Python frame per node; the passes read and make hundreds of
# thousands). The offsets come from the classes' member descriptors (_build_ir.pyx); a field
# that is no slot is read and written the ordinary way (offset -1). The accessors are inline
# here: they run once per expression node.
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XDECREF

cdef extern from "structmember.h":      # (PyMemberDef's fields, before Python 3.12)
    ctypedef struct PyMemberDef:
        Py_ssize_t offset

cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    ctypedef struct PyTypeObject:
        PyObject* (*tp_alloc)(PyTypeObject*, Py_ssize_t)

# expressions deeper than this were refused by the Python passes before (recursion limit);
# the guard only keeps the C stack safe
cdef enum:
    MAX_EXPR_DEPTH = 4000

# cengine.ir's expression classes
cdef object _Bytes, _ByteSet, _CharSet, _Seq, _Alt, _Repeat, _Ref, _Nothing, _Dfa

# their fields' slot offsets (-1: no slot)
cdef Py_ssize_t _SEQ_ITEMS, _ALT_ITEMS, _REPEAT_ITEM, _REPEAT_LO, _REPEAT_HI, _REF_NAME
cdef Py_ssize_t _BYTES_DATA, _BYTESET_RANGES, _CHARSET_RANGES


cdef inline object _field(e, Py_ssize_t offset, str name):
    """e.name, read from its slot at offset when there is one."""
    cdef PyObject* v
    if offset >= 0:
        v = (<PyObject**>(<char*><PyObject*>e + offset))[0]
        if v != NULL:
            return <object>v
    return getattr(e, name)


cdef inline object _make(k, Py_ssize_t offset, str name, value, Py_ssize_t offset2=-1,
                         str name2=None, value2=None, Py_ssize_t offset3=-1, str name3=None,
                         value3=None):
    """A new k with its fields set (up to three), as object.__new__ + the frozen
    dataclass's own __init__ would make it, without the __init__'s Python frame."""
    cdef PyObject* o = (<PyTypeObject*><PyObject*>k).tp_alloc(<PyTypeObject*><PyObject*>k, 0)
    if o == NULL:
        raise MemoryError()
    x = <object>o
    Py_DECREF(x)            # (the cast took a second reference)
    _set_field(x, offset, name, value)
    if name2 is not None:
        _set_field(x, offset2, name2, value2)
    if name3 is not None:
        _set_field(x, offset3, name3, value3)
    return x


cdef inline int _set_field(x, Py_ssize_t offset, str name, value) except -1:
    cdef PyObject** slot
    if offset >= 0:
        slot = <PyObject**>(<char*><PyObject*>x + offset)
        Py_INCREF(value)
        Py_XDECREF(slot[0])
        slot[0] = <PyObject*>value
    else:
        object.__setattr__(x, name, value)
    return 0


cdef inline bint _made_elsewhere(e, kinds):
    """e is a rule whose positions another module makes (kinds: its type, or a tuple of such
    types: ir.AnyOrder, ir.FreeKey)."""
    k = type(e)
    return k is kinds or (type(kinds) is tuple and k in <tuple>kinds)
