"""The CPU backend's LLVM module as text, whole or split into independently compiled parts.

A kernel's loop-nest function (its "hot" body) and its constant globals refer only to each
other and to declarations (intrinsics, libm), so the hot definitions fall into connected
groups, and a set of groups plus every declaration is a valid LLVM module by itself. The
entry points that call the bodies (ctypes, PyObject and fastcall wrappers: a few loads and
a call) go into one more "cold" part, which declares the bodies it calls. runtime.py
compiles the hot parts at -O3 on several threads and the cold part without optimization
(at -O3 the wrappers took a quarter of the MLP step's LLVM time), and links the object
files into one library.

Printing an llvmlite module is slow Python, so `ModuleText` prints each global once and
reuses the text (the backend hands in the bodies it already printed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import llvmlite.ir as ir

_REF = re.compile(r'@"([^"]+)"|@([-\w$.]+)')

#: Optimization levels of the parts `split` returns.
HOT, COLD = 3, 0


class ModuleText:
    """The text of llvmlite module `module`; `texts` maps global names to their printed
    definitions where the caller already has them."""

    def __init__(self, module: ir.Module, texts: dict[str, str] | None = None):
        self.module = module
        self._texts = texts if texts is not None else {}

    def _text(self, name: str, value) -> str:
        text = self._texts.get(name)
        if text is None:
            text = self._texts[name] = str(value)
        return text

    def _header(self) -> list[str]:
        m = self.module
        types = [t.get_declaration() for t in m.get_identified_types().values()]
        return [f'; ModuleID = "{m.name}"', f'target triple = "{m.triple}"',
                f'target datalayout = "{m.data_layout}"', ""] + types

    def _metadata(self) -> list[str]:
        """The module's unnamed metadata nodes (loop hints); every part carries them all,
        since a node no function of a part refers to is legal and ignored."""
        return [str(md) for md in self.module.metadata]

    def whole(self) -> str:
        """The module's text (what str(module) prints)."""
        m = self.module
        if m.namedmetadata:
            return str(m)
        return "\n".join(self._header() + [self._text(n, v) for n, v in m.globals.items()]
                         + self._metadata())

    def split(self, max_parts: int, hot: Iterable[str] = ()) -> list[tuple[str, int]]:
        """The module as (text, optimization level) parts that together define every
        global once: at most `max_parts` HOT parts holding the functions named in `hot`
        with the globals they use, and one COLD part with everything else. Without hot
        functions, or when the definitions cannot be separated, the whole module is one
        HOT part."""
        m = self.module
        hot = set(hot)  # (before printing: `hot` may be a view of the text cache)
        if m.namedmetadata:
            return [(self.whole(), HOT)]
        decls, groups, cold = self._partition(hot)
        if not groups:
            return [(self.whole(), HOT)]
        n = max(1, min(max_parts, len(groups)))
        # Heaviest groups first onto the lightest part; a part keeps module order.
        weights = [sum(len(self._texts[g]) for g in group) for group in groups]
        load, members = [0] * n, [[] for _ in range(n)]
        for k in sorted(range(len(groups)), key=lambda k: -weights[k]):
            p = load.index(min(load))
            load[p] += weights[k]
            members[p].append(k)
        head = self._header() + decls
        hot_names = {g for group in groups for g in group}
        tail = self._metadata()
        parts = [("\n".join(head + [_visible(self._texts[g], g in hot_names)
                                    for k in sorted(ks) for g in groups[k]] + tail), HOT)
                 for ks in members]
        if cold:
            called = [_declaration(self._texts[g]) for group in groups for g in group
                      if g in hot_names and isinstance(m.globals[g], ir.Function)]
            parts.append(("\n".join(head + called + [self._texts[g] for g in cold] + tail),
                          COLD))
        return parts

    def _partition(self, hot: set[str]):
        """(declaration texts, hot groups, cold definition names), all in module order; hot
        groups are the hot functions and the globals they use, connected through their
        references. No groups when a cold definition uses a global of a hot group other
        than a hot function (it could not be declared across parts)."""
        decls, defs = [], []
        for name, value in self.module.globals.items():
            if isinstance(value, ir.Function) and value.is_declaration:
                decls.append(self._text(name, value))
            else:
                self._text(name, value)
                defs.append(name)
        refs = {name: {q or b for q, b in _REF.findall(self._texts[name])} - {name}
                for name in defs}
        hot = {n for n in hot if n in refs}
        in_hot = set(hot)
        pending = list(hot)
        while pending:  # everything a hot function uses (but declarations) is hot too
            for other in refs[pending.pop()]:
                if other in refs and other not in in_hot:
                    in_hot.add(other)
                    pending.append(other)
        cold = [n for n in defs if n not in in_hot]
        if any(other in in_hot and other not in hot for n in cold for other in refs[n]):
            return decls, [], cold
        parent = {n: n for n in in_hot}

        def find(n):
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        for name in in_hot:
            for other in refs[name]:
                if other in parent:
                    a, b = find(name), find(other)
                    if a != b:
                        parent[b] = a
        groups: dict[str, list[str]] = {}
        for name in defs:
            if name in parent:
                groups.setdefault(find(name), []).append(name)
        return decls, list(groups.values()), cold


def _visible(text: str, hot: bool) -> str:
    """A hot function's definition with default linkage (the cold part calls it)."""
    if hot and text.startswith("define internal "):
        return "define " + text[len("define internal "):]
    return text


def _declaration(text: str) -> str:
    """`declare` for the function whose definition is `text`."""
    first = _visible(text, True).split("\n", 1)[0]
    return "declare " + first[len("define "):]
