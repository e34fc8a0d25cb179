"""The CPU backend's LLVM module as text, whole or split into independently compiled parts.

A kernel's functions (its body, its entry points) and its constant globals refer only to
each other and to declarations (intrinsics, libm), so the definitions fall into connected
groups; a set of groups plus every declaration is a valid LLVM module by itself. Splitting
lets cpu_runtime compile the parts on several threads (LLVM releases the GIL) and link their
object files into one library.

Printing an llvmlite module is slow Python, so `ModuleText` prints each global once and
reuses the text (the backend hands in the bodies it already printed).
"""

from __future__ import annotations

import re

import llvmlite.ir as ir

_REF = re.compile(r'@"([^"]+)"|@([-\w$.]+)')


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

    def whole(self) -> str:
        """The module's text (what str(module) prints)."""
        m = self.module
        if m.namedmetadata or m.metadata:
            return str(m)
        return "\n".join(self._header() + [self._text(n, v) for n, v in m.globals.items()])

    def split(self, max_parts: int) -> list[str]:
        """The module as at most `max_parts` module texts that together define every
        global once (one text when it cannot be split)."""
        m = self.module
        if max_parts <= 1 or m.namedmetadata or m.metadata:
            return [self.whole()]
        decls, groups = self._groups()
        if len(groups) < 2:
            return [self.whole()]
        n = min(max_parts, len(groups))
        # Longest groups first onto the lightest part; a part keeps module order.
        weights = [sum(len(self._texts[g]) for g in group) for group in groups]
        load, members = [0] * n, [[] for _ in range(n)]
        for k in sorted(range(len(groups)), key=lambda k: -weights[k]):
            p = load.index(min(load))
            load[p] += weights[k]
            members[p].append(k)
        head = self._header() + decls
        return ["\n".join(head + [self._texts[g] for k in sorted(ks) for g in groups[k]])
                for ks in members]

    def _groups(self):
        """(declaration texts, groups of definition names): definitions that refer to
        each other, directly or not, share a group; groups and names keep module order."""
        decls, defs = [], []
        for name, value in self.module.globals.items():
            if isinstance(value, ir.Function) and value.is_declaration:
                decls.append(self._text(name, value))
            else:
                self._text(name, value)
                defs.append(name)
        parent = {n: n for n in defs}

        def find(n):
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        for name in defs:
            for quoted, bare in _REF.findall(self._texts[name]):
                other = quoted or bare
                if other in parent and other != name:
                    a, b = find(name), find(other)
                    if a != b:
                        parent[b] = a
        order: dict[str, list[str]] = {}
        for name in defs:
            order.setdefault(find(name), []).append(name)
        return decls, list(order.values())
