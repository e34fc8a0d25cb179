"""NumPy reference interpreter for HLO: the golden answer in every differential test.

Public entry points:
  evaluate_module(module, args) -> list[np.ndarray]   entry result, tuple root flattened
  evaluate_computation(comp, args) -> value            an array, or a (nested) tuple of arrays
  evaluate_instruction(instr, operand_values) -> value one instruction (constant folding)
  register_custom_call(target, fn)                     give custom-call targets a meaning
  has_implementation(opcode) -> bool                   whether an opcode can be evaluated

Values are numpy arrays (0-d for scalars) or Python tuples of values. Every result is cast to
its instruction's dtype and dims, so float32 programs stay float32; bf16 values live in
float32 storage and are rounded to bfloat16 after every instruction (callers see ml_dtypes
bfloat16 arrays).

Scalar computations applied elementwise (reducers, comparators, scatter combiners, map
bodies) are evaluated "batched": once over whole arrays, with numpy broadcasting, instead of
once per element. Computations that cannot run batched fall back to a per-element loop.

Layout, imports flowing one way: elementwise.py, numerics.py, linalg.py, take.py and
sort_keys.py are NumPy semantics with no evaluator state; core.py is the interpreter, the
opcode table and the structural opcodes; sort.py (which runs comparators through core),
ops.py, indexing.py and collectives.py are opcode families; api.py imports the families and
registers them in core's table.

The public names are loaded on first use: `import minijax` needs elementwise.py, linalg.py
and collectives.py (lax's eager rules and lowerings share their semantics) but not the
interpreter, so importing one of those must not load it.
"""

__all__ = ["EvaluatorError", "OPCODES", "evaluate_module", "evaluate_computation",
           "evaluate_instruction", "register_custom_call", "register_opcodes",
           "has_implementation", "flatten_value"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Lazy on purpose (see the docstring): the interpreter loads on first use.
    from minijax.compiler.evaluator import api
    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
