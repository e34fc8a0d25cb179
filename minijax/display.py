"""Rich display in Jupyter: highlighted HLO and jaxprs, and the fused graph of a program.

`Lowered._repr_html_`, `Compiled._repr_html_` and `ClosedJaxpr._repr_html_` call these, so
a notebook shows `jit(f).lower(x)` as syntax-highlighted HLO and `.compile()` as its fused
graph (an SVG drawn by Graphviz's `dot` when it is installed, an HTML list of the kernels
otherwise) above the optimized HLO. Fusions are clusters labelled with the Python source
lines of the operations they hold. Stdlib only: it reads HLO modules through their
attributes (entry, instructions, operands, called, metadata).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess

__all__ = ["hlo_html", "jaxpr_html", "module_dot", "dot_to_svg", "graph_html",
           "lowered_html", "compiled_html"]

_STYLE = ("font-family:monospace;font-size:12px;line-height:1.35;background:#f8f8f8;"
          "padding:6px;overflow-x:auto")
_COLORS = {"keyword": "#8959a8", "opcode": "#4271ae", "shape": "#718c00",
           "attr": "#999999", "name": "#333333", "prim": "#4271ae"}

_HLO_TOKEN = re.compile(
    r"(?P<keyword>\b(?:HloModule|ENTRY|ROOT)\b)"
    r"|(?P<shape>\b(?:pred|[suf]\d+|bf16|c64|c128|token)\[[\d,]*\](?:\{[\d,]*\})?)"
    r"|(?P<opcode>(?<=\s)[a-z][a-z0-9-]*(?=\())"
    r"|(?P<attr>\bmetadata=\{[^}]*\}|\b[a-z_]+=)")


def _span(kind: str, text: str) -> str:
    return f'<span style="color:{_COLORS[kind]}">{html.escape(text)}</span>'


def _highlight(text: str, pattern) -> str:
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        out.append(_span(m.lastgroup, m.group()))
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def hlo_html(text: str) -> str:
    """HLO text as a highlighted <pre> block (keywords, opcodes, shapes, attributes)."""
    return f'<pre style="{_STYLE}">{_highlight(text, _HLO_TOKEN)}</pre>'


_JAXPR_TOKEN = re.compile(
    r"(?P<keyword>\b(?:lambda|let|in)\b)"
    r"|(?P<shape>\b(?:bool|[suif]\d+|bf16|c64|c128|float0)\[[\d,]*\])"
    r"|(?P<prim>(?<==\s)[a-z_][a-z0-9_]*)")


def jaxpr_html(text: str) -> str:
    """A printed jaxpr as a highlighted <pre> block."""
    return f'<pre style="{_STYLE}">{_highlight(text, _JAXPR_TOKEN)}</pre>'


# --------------------------------------------------------------------------- graphs

_HIDDEN = frozenset({"tuple", "get-tuple-element", "constant", "bitcast"})


def _source(instr) -> str:
    md = getattr(instr, "metadata", None) or {}
    line = md.get("source_line")
    return f"{os.path.basename(md.get('source_file', ''))}:{line}" if line else ""


def _fusion_sources(instr) -> list[str]:
    comp = instr.called.get("calls")
    found = [_source(i) for i in comp.instructions] if comp is not None else []
    return sorted({s for s in found if s}, key=lambda s: (s.split(":")[0],
                                                          int(s.split(":")[1])))


def _shape_text(shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_shape_text(s) for s in shape.tuple_shapes) + ")"
    return f"{shape.element_type}[{','.join(map(str, shape.dims))}]"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _producer(instr):
    """The instruction whose value `instr` forwards (through tuples / get-tuple-element)."""
    while instr.opcode == "get-tuple-element" and instr.operands[0].opcode == "tuple":
        instr = instr.operands[0].operands[instr.attrs["index"]]
    if instr.opcode == "get-tuple-element":
        return instr.operands[0]
    return instr


def module_dot(module) -> str:
    """Graphviz text of the entry computation: each fusion a cluster of its operations,
    labelled with the fusion's name and the source lines of what it fused."""
    lines = ["digraph hlo {", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", '
             'fontname=monospace, fontsize=10];']
    node_of = {}  # id(entry instruction) -> the graph node its value comes out of
    for instr in module.entry.instructions:
        if instr.opcode in _HIDDEN:
            continue
        name = instr.name
        if instr.opcode == "fusion":
            comp = instr.called["calls"]
            label = f"{name} ({instr.attrs.get('kind', '')})"
            srcs = _fusion_sources(instr)
            if srcs:
                label += "\\n" + ", ".join(srcs)
            lines.append(f"  subgraph {_q('cluster_' + name)} {{")
            lines.append(f'    label={_q(label)}; style="rounded,filled"; '
                         'fillcolor="#eef3fb"; fontname=monospace; fontsize=10;')
            for inner in comp.instructions:
                if inner.opcode in ("parameter", "tuple", "constant"):
                    continue
                text = f"{inner.opcode}\\n{_shape_text(inner.shape)}"
                lines.append(f"    {_q(name + '/' + inner.name)} [label={_q(text)}];")
            lines.append("  }")
            for inner in comp.instructions:
                if inner.opcode in ("parameter", "tuple", "constant"):
                    continue
                for op in inner.operands:
                    if op.opcode == "parameter":
                        src = instr.operands[op.parameter_number]
                        src_node = node_of.get(id(_producer(src)))
                        if src_node is not None:
                            lines.append(f"  {_q(src_node)} -> {_q(name + '/' + inner.name)};")
                    elif op.opcode not in ("tuple", "constant"):
                        lines.append(f"  {_q(name + '/' + op.name)} -> "
                                     f"{_q(name + '/' + inner.name)};")
            root = comp.root
            outs = root.operands if root.opcode == "tuple" else [root]
            node_of[id(instr)] = name + "/" + outs[0].name if outs[0].opcode != "parameter" \
                else name
            if outs[0].opcode == "parameter":
                lines.append(f"  {_q(name)} [label={_q(name)}];")
            continue
        shape = "ellipse" if instr.opcode == "parameter" else "box"
        text = f"{name}\\n{instr.opcode} {_shape_text(instr.shape)}"
        src = _source(instr)
        if src and instr.opcode != "parameter":
            text += f"\\n{src}"
        lines.append(f"  {_q(name)} [label={_q(text)}, shape={shape}];")
        node_of[id(instr)] = name
        for op in instr.operands:
            src_node = node_of.get(id(_producer(op)))
            if src_node is not None:
                lines.append(f"  {_q(src_node)} -> {_q(name)};")
    root = module.entry.root
    outs = root.operands if root.opcode == "tuple" else [root]
    lines.append('  "output" [shape=ellipse, fillcolor="#f4f4f4"];')
    for op in outs:
        src_node = node_of.get(id(_producer(op)))
        if src_node is not None:
            lines.append(f'  {_q(src_node)} -> "output";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_to_svg(dot_text: str, timeout: float = 20.0) -> str | None:
    """SVG from Graphviz's `dot`, or None when it is not installed (or fails)."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or "<svg" not in done.stdout:
        return None
    return done.stdout[done.stdout.index("<svg"):]


def graph_html(module) -> str:
    """The fused graph without Graphviz: one row per kernel of the entry computation with
    its inputs, the operations it fused and their source lines."""
    rows = []
    for instr in module.entry.instructions:
        if instr.opcode in _HIDDEN or instr.opcode == "parameter":
            continue
        if instr.opcode == "fusion":
            ops = [i.opcode for i in instr.called["calls"].instructions
                   if i.opcode not in ("parameter", "tuple", "constant")]
            what = f"fusion ({instr.attrs.get('kind', '')}): " + " → ".join(ops)
            where = ", ".join(_fusion_sources(instr))
        else:
            what, where = instr.opcode, _source(instr)
        inputs = ", ".join(_producer(o).name for o in instr.operands)
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in (
            instr.name, what, _shape_text(instr.shape), inputs, where)) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("kernel", "operations", "shape", "inputs",
                                             "source"))
    return ('<table style="font-family:monospace;font-size:12px">'
            f"<tr>{head}</tr>{''.join(rows)}</table>")


def lowered_html(lowered) -> str:
    """HTML for `jit(f).lower(...)`: the HLO before optimization."""
    title = f"<b>Lowered</b> {html.escape(lowered.module.name)} (HLO before optimization)"
    return f"<div>{title}{hlo_html(lowered.as_text())}</div>"


def compiled_html(compiled, use_dot: bool = True) -> str:
    """HTML for a Compiled: summary, the fused graph, and the optimized HLO (folded)."""
    module = compiled._entry.module
    mem = compiled.memory_analysis()
    peak = getattr(mem, "peak_memory_in_bytes", None)
    summary = (f"<b>Compiled</b> {html.escape(module.name)}: "
               f"{compiled.kernel_count} kernels" +
               (f", peak memory {peak} bytes" if peak is not None else ""))
    svg = dot_to_svg(module_dot(module)) if use_dot else None
    graph = svg if svg is not None else graph_html(module)
    text = hlo_html(compiled.as_text())
    return (f"<div>{summary}<div>{graph}</div><details><summary>optimized HLO</summary>"
            f"{text}</details></div>")
