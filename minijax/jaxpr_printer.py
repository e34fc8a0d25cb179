"""Prints jaxprs in JAX's style: `{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`."""

from __future__ import annotations

import numpy as np


def _var_names():
    letters = "abcdefghijklmnopqrstuvwxyz"
    n = 0
    while True:
        name, k = "", n
        while True:
            name = letters[k % 26] + name
            k = k // 26 - 1
            if k < 0:
                break
        yield name
        n += 1


class _Namer:
    def __init__(self):
        self.names: dict = {}
        self.fresh = _var_names()

    def __call__(self, v) -> str:
        if _is_literal(v):
            return _literal_text(v.val)
        if v not in self.names:
            self.names[v] = next(self.fresh)
        return self.names[v]

    def typed(self, v) -> str:
        return f"{self(v)}:{v.aval.str_short()}"


def _literal_text(val) -> str:
    arr = np.asarray(val)
    if arr.ndim == 0:
        item = arr.item()
        if isinstance(item, bool):
            return str(item)
        if isinstance(item, float):
            return repr(item)
        return str(item)
    return f"<{arr.dtype}{list(arr.shape)}>"


# The printer sits below core (core's Jaxpr.__str__ uses it), so it recognizes core's types
# by their structure instead of importing them.
def _is_literal(v) -> bool:
    return type(v).__name__ == "Literal" and hasattr(v, "val")


def _is_jaxpr(value) -> bool:
    return hasattr(value, "eqns") and hasattr(value, "invars") and hasattr(value, "outvars")


def _is_closed_jaxpr(value) -> bool:
    return hasattr(value, "jaxpr") and hasattr(value, "consts")


def _param_text(value, namer, indent: int, source: bool) -> str:
    if _is_closed_jaxpr(value):
        value = value.jaxpr
    if _is_jaxpr(value):
        return _jaxpr_text(value, _Namer(), indent + 2, source)
    if isinstance(value, (list, tuple)) and value and (
            _is_jaxpr(value[0]) or _is_closed_jaxpr(value[0])):
        inner = [_param_text(v, namer, indent, source) for v in value]
        return "(\n" + "\n".join(inner) + "\n" + " " * indent + ")"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def _eqn_text(eqn, namer, indent: int, source: bool) -> str:
    outs = " ".join(namer.typed(v) for v in eqn.outvars) or "_"
    params = ""
    if eqn.params:
        items = [f"{k}={_param_text(v, namer, indent, source)}"
                 for k, v in sorted(eqn.params.items())]
        params = "[" + " ".join(items) + "]" if len(" ".join(items)) < 60 or "\n" in "".join(
            items) else "[\n" + "\n".join(" " * (indent + 6) + i for i in items) + "\n" + \
            " " * (indent + 4) + "]"
    args = " ".join(namer(v) for v in eqn.invars)
    text = f"{outs} = {eqn.primitive.name}{params} {args}".rstrip()
    if source and eqn.source_info is not None and eqn.source_info.line:
        text += f"  # {eqn.source_info.short()}"
    return " " * (indent + 4) + text


def _jaxpr_text(jaxpr, namer, indent: int, source: bool) -> str:
    consts = " ".join(namer.typed(v) for v in jaxpr.constvars)
    invars = " ".join(namer.typed(v) for v in jaxpr.invars)
    pad = " " * indent
    lines = [f"{pad}{{ lambda {consts}; {invars}. let"]
    lines += [_eqn_text(eqn, namer, indent, source) for eqn in jaxpr.eqns]
    outs = ", ".join(namer(v) for v in jaxpr.outvars)
    if len(jaxpr.outvars) == 1:
        outs += ","
    lines.append(f"{pad}  in ({outs}) }}")
    return "\n".join(lines)


def jaxpr_to_text(jaxpr, source_info: bool = False) -> str:
    """The JAX-style text of a jaxpr; `source_info=True` appends `# file:line` per equation."""
    return _jaxpr_text(jaxpr, _Namer(), 0, source_info)
