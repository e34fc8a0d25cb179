"""Ahead-of-time export of a jittable function to a native object file and C header.

    minijax.aot.export(fun, *example_args, target="x86_64-linux-gnu", path="out/model")

writes `out/model.o` and `out/model.h`. The header declares (NAME is the file name of
`path`, made a C identifier, unless `name=` is given):

    size_t NAME_temp_size(void);     // bytes of scratch memory NAME_run needs
    void NAME_run(const void *const *inputs, void *const *outputs, void *temp);

`inputs` and `outputs` point to dense row-major buffers of the shapes and dtypes the header
lists (the function's flattened arguments and results); `temp` points to NAME_temp_size()
bytes (may be NULL when that is 0). Nothing of Python or minijax is needed at run time:
the object holds the fused kernels the CPU backend would run, constants as read-only data,
and `dot` as a generated loop nest. Programs with other library calls or control flow
(sort, while, convolution, ...) raise NotImplementedError naming the operation.
Link with `cc driver.c model.o -lm`. The code is reentrant: calls on different temp
buffers may run concurrently.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from minijax.api_jit import JitWrapped, jit
from minijax.compiler.hlo.ir import element_type_of
from minijax.compiler.pipeline import CompileOptions, optimize

TARGETS = {
    "x86_64-linux-gnu": ("x86_64-unknown-linux-gnu", "x86-64"),
    "aarch64-linux-gnu": ("aarch64-unknown-linux-gnu", "generic"),
}
_ALIGN = 64
_C_TYPES = {"f32": "float", "f64": "double", "s8": "int8_t", "s16": "int16_t",
            "s32": "int32_t", "s64": "int64_t", "u8": "uint8_t", "u16": "uint16_t",
            "u32": "uint32_t", "u64": "uint64_t", "pred": "uint8_t", "f16": "uint16_t"}


@dataclass
class ExportedFunction:
    """What `export` wrote: file paths, the C names, the buffer shapes and the temp size."""

    object_path: str
    header_path: str
    name: str
    target: str
    input_shapes: list = field(default_factory=list)    # (dims, numpy dtype) per input
    output_shapes: list = field(default_factory=list)   # (dims, numpy dtype) per output
    temp_bytes: int = 0


def _c_name(path: str) -> str:
    base = os.path.basename(path) or "minijax_export"
    name = re.sub(r"\W", "_", base)
    return "_" + name if name[0].isdigit() else name


def export(fun, *example_args, target: str = "x86_64-linux-gnu", path: str,
           name: str | None = None, cpu: str | None = None) -> ExportedFunction:
    """Compile `fun` for `example_args`' shapes and write `path`.o and `path`.h.

    `target` is "x86_64-linux-gnu" or "aarch64-linux-gnu"; `cpu` an LLVM CPU name (default a
    baseline CPU of the target, so the object runs on any machine of that architecture).
    Raises NotImplementedError naming the first operation that cannot be exported.
    """
    if target not in TARGETS:
        raise ValueError(f"minijax.aot.export: unknown target {target!r}; "
                         f"choose one of {sorted(TARGETS)}")
    wrapped = fun if isinstance(fun, JitWrapped) else jit(fun)
    lowered = wrapped.lower(*example_args)
    module = optimize(lowered.module, CompileOptions(opt_level=2, backend="cpu"))
    name = name or _c_name(path)
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"minijax.aot.export: name {name!r} is not a C identifier")
    hoisted = [np.ascontiguousarray(h) for h in lowered.hoisted]
    # Lazy: llvmlite (an optional dependency) loads only when something is exported.
    from minijax.compiler.codegen.cpu.aot_program import emit_program
    ir_text, temp_bytes, in_shapes, out_shapes = emit_program(module, name, hoisted, _ALIGN)
    triple, default_cpu = TARGETS[target]
    obj = _compile_object(ir_text, triple, cpu or default_cpu)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path + ".o", "wb") as f:
        f.write(obj)
    result = ExportedFunction(path + ".o", path + ".h", name, target,
                              [(s.dims, s.dtype) for s in in_shapes],
                              [(s.dims, s.dtype) for s in out_shapes], temp_bytes)
    with open(path + ".h", "w") as f:
        f.write(_header(result, wrapped))
    return result


def _compile_object(ir_text: str, triple: str, cpu: str) -> bytes:
    import llvmlite.binding as llvm
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(triple)
    tm = target.create_target_machine(cpu=cpu, features="", opt=3, reloc="pic",
                                      codemodel="small")
    mod = llvm.parse_assembly(ir_text)
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_object(mod)


def _header(res: ExportedFunction, wrapped) -> str:
    guard = f"MINIJAX_AOT_{res.name.upper()}_H"
    lines = [f"/* Generated by minijax.aot.export from {wrapped._name} for {res.target}. */",
             f"#ifndef {guard}", f"#define {guard}", "#include <stddef.h>",
             "#include <stdint.h>", "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    n = res.name
    lines.append(f"#define {n.upper()}_NUM_INPUTS {len(res.input_shapes)}")
    lines.append(f"#define {n.upper()}_NUM_OUTPUTS {len(res.output_shapes)}")
    for kind, shapes in (("INPUT", res.input_shapes), ("OUTPUT", res.output_shapes)):
        for k, (dims, dtype) in enumerate(shapes):
            et = _element_type(dtype)
            size = int(np.prod(dims)) if dims else 1
            lines.append(f"/* {kind.lower()} {k}: {_C_TYPES.get(et, 'unsigned char')}"
                         f"[{', '.join(map(str, dims))}] ({np.dtype(dtype).name}) */")
            lines.append(f"#define {n.upper()}_{kind}{k}_SIZE {size}")
            lines.append(f"#define {n.upper()}_{kind}{k}_BYTES {size * np.dtype(dtype).itemsize}")
    lines += ["", "/* Bytes of scratch memory NAME_run needs (it may be 0). */",
              f"size_t {n}_temp_size(void);", "",
              "/* Run the exported function: inputs[i] and outputs[i] point to dense row-major",
              "   buffers as listed above, temp to temp_size() bytes. Reentrant. */",
              f"void {n}_run(const void *const *inputs, void *const *outputs, void *temp);",
              "", "#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def _element_type(dtype) -> str:
    return element_type_of(np.dtype(dtype))


__all__ = ["ExportedFunction", "TARGETS", "export"]
