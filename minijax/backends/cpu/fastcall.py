"""Small kernels as CPython builtin functions: a call costs ~0.1 us instead of ctypes' ~2 us.

For each kernel the backend also emits `<name>_fc`, a METH_FASTCALL C function
`PyObject *f(PyObject *self, PyObject *const *args, Py_ssize_t nargs)` that reads each
argument's data pointer (a numpy array: inputs, then outputs), runs the kernel over its whole
outer range on the calling thread and returns `self` (None, with its reference count
incremented). `make_builtin` wraps the native address in a builtin function object with
`PyCFunction_NewEx`. The GIL stays held, so only kernels below the threading threshold use
this entry; larger ones go through ctypes (which releases the GIL) and the thread pool.
The backend only calls these with arrays it allocated or checked (C-contiguous ndarrays of
the right dtype and count), which is what makes skipping the checks safe.
"""

from __future__ import annotations

import ctypes
import sys

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import I64

METH_FASTCALL = 0x80
#: Builtins are only made on CPython (reference counting at offset 0 of every object).
SUPPORTED = sys.implementation.name == "cpython"


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


def emit_fastcall_entry(module: ir.Module, name: str, count: int, outer: int,
                        data_offset: int) -> str:
    """Emit `<name>_fc` calling kernel `name(void **buffers, 0, outer)`; returns its name."""
    i8p = ir.IntType(8).as_pointer()
    fn = ir.Function(module, ir.FunctionType(i8p, [i8p, i8p.as_pointer(), I64]), name + "_fc")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    arr = b.alloca(ir.ArrayType(i8p, max(count, 1)))
    for k in range(count):
        obj = b.load(b.gep(fn.args[1], [ir.Constant(I64, k)], inbounds=True))
        field = b.bitcast(b.gep(obj, [ir.Constant(I64, data_offset)]), i8p.as_pointer())
        b.store(b.load(field), b.gep(arr, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
    if outer > 0:
        b.call(module.get_global(name), [b.bitcast(arr, i8p.as_pointer()),
                                         ir.Constant(I64, 0), ir.Constant(I64, outer)])
    refcnt = b.bitcast(fn.args[0], I64.as_pointer())
    b.store(b.add(b.load(refcnt), ir.Constant(I64, 1)), refcnt)
    b.ret(fn.args[0])
    return name + "_fc"


def make_builtin(address: int, name: str):
    """A builtin function object calling the METH_FASTCALL entry at `address`.

    Returns (function, keepalive): keep `keepalive` (the method table) alive with it.
    """
    md = _MethodDef(name.encode(), address, METH_FASTCALL, None)
    return _new_builtin(ctypes.addressof(md), None, None), md
