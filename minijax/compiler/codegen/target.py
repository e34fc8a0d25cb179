"""The target hook of the shared code generator: what differs between LLVM targets.

The elemental emitter (elemental.py) and the math approximations are target-neutral; a
kernel emitter for a target (the CPU loop nests in loops.py, the GPU grid mapping in gpu/)
passes a `CodegenTarget` describing what its target can do:

- `has_libm`: whether scalar C math calls (float64 sin, cos, tan, erf, pow, atan2, cbrt
  fall back to them, see math_approx.py) can be linked; a GPU has no libm, so those ops are
  reported unsupported instead of producing an unresolved symbol;
- `global_addrspace` / `shared_addrspace`: the LLVM address spaces of kernel buffers and
  block-shared scratch (0 = generic on the CPU; NVPTX: 1 = global, 3 = shared);
- `vector_bytes`: the widest load/store the kernel emitter should form (CPU: left to the
  loop vectorizer, 0; NVPTX: 16-byte ld.global.v4 / st.global.v4).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodegenTarget:
    """What a kernel emitter's target supports (see the module docstring)."""

    name: str
    has_libm: bool = True
    global_addrspace: int = 0
    shared_addrspace: int = 0
    vector_bytes: int = 0


CPU_TARGET = CodegenTarget("cpu")
NVPTX_TARGET = CodegenTarget("nvptx", has_libm=False, global_addrspace=1, shared_addrspace=3,
                             vector_bytes=16)

#: Opcodes whose float64 form calls the C math library (math_approx._scalar_libm).
LIBM_F64_OPCODES = frozenset({"sine", "cosine", "tan", "erf", "power", "atan2", "cbrt"})
