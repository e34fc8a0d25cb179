"""Low-level reading of HLO text: a cursor with line/column errors, shapes and literals.

Used by `minijax.compiler.hlo.parser`. Whitespace, `/* ... */` and `// ...` comments are
skipped between tokens.
"""

from __future__ import annotations

import re

import numpy as np

from minijax.compiler.hlo.ir import ELEMENT_TYPES, Shape

_NAME_RE = re.compile(r"%?[A-Za-z_$][A-Za-z0-9_.\-$]*")
_INT_RE = re.compile(r"[-+]?\d+")
_OPCODE_RE = re.compile(r"[a-z][a-z0-9\-]*")
_NUMBER_RE = re.compile(
    r"[-+]?(?:inf|nan(?:\([^)]*\))?|0x[0-9a-fA-F]+|"
    r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_SHAPE_TYPES = frozenset(ELEMENT_TYPES) | {"token"}


class HloParseError(ValueError):
    """Bad HLO text. The message gives the line and column and shows the offending line."""

    def __init__(self, message: str, line: int, column: int, source_line: str = ""):
        self.line = line
        self.column = column
        text = f"HLO parse error at line {line}, column {column}: {message}"
        if source_line:
            text += f"\n  {source_line}\n  {' ' * (column - 1)}^"
        super().__init__(text)


class Cursor:
    """A position in HLO text with token-level helpers."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    # -- errors and positions
    def location(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return line, col

    def error(self, message: str, pos: int | None = None) -> HloParseError:
        line, col = self.location(pos)
        lines = self.text.split("\n")
        src = lines[line - 1] if line - 1 < len(lines) else ""
        return HloParseError(message, line, col, src)

    # -- whitespace
    def skip_ws(self, newlines: bool = True) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t\r" or (newlines and c == "\n"):
                self.pos += 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated comment")
                self.pos = end + 2
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
            else:
                break

    def at_end(self) -> bool:
        self.skip_ws()
        return self.pos >= len(self.text)

    def peek(self, newlines: bool = True) -> str:
        self.skip_ws(newlines)
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def startswith(self, s: str) -> bool:
        self.skip_ws()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.startswith(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.accept(s):
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of input"
            raise self.error(f"expected {what or repr(s)}, found {found!r}")

    def match(self, regex: re.Pattern, what: str) -> str:
        self.skip_ws()
        m = regex.match(self.text, self.pos)
        if not m:
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of input"
            raise self.error(f"expected {what}, found {found!r}")
        self.pos = m.end()
        return m.group(0)

    def name(self, what: str = "a name") -> str:
        """A name, with any leading `%` removed."""
        return self.match(_NAME_RE, what).lstrip("%")

    def integer(self, what: str = "an integer") -> int:
        return int(self.match(_INT_RE, what))

    def opcode(self) -> str:
        return self.match(_OPCODE_RE, "an opcode")

    def keyword_ahead(self, word: str) -> bool:
        """Whether the next token is exactly `word` (not a prefix of a longer name)."""
        self.skip_ws()
        m = _NAME_RE.match(self.text, self.pos)
        return bool(m) and m.group(0) == word

    def raw_value(self, allow_empty: bool = False) -> str:
        """One attribute value as text: a run of characters with brackets balanced that ends
        at top-level whitespace, `,` or an unmatched closing bracket (so a value never runs
        into the next attribute or the next instruction, wherever the line breaks are).

        With `allow_empty` (a rank-0 `padding=`), a value must start on the same line."""
        self.skip_ws(newlines=not allow_empty)
        text, n = self.text, len(self.text)
        start = self.pos
        closers = {"{": "}", "(": ")", "[": "]"}
        stack: list[str] = []
        while self.pos < n:
            c = text[self.pos]
            if c == '"':
                self.pos = self._skip_string(self.pos)
                continue
            if c in closers:
                stack.append(closers[c])
            elif c in "})]":
                if not stack:
                    break
                if c != stack[-1]:
                    raise self.error(f"unbalanced {c!r}")
                stack.pop()
            elif not stack and (c in ", \t\r\n" or text.startswith(("/*", "//"), self.pos)):
                break
            self.pos += 1
        if stack:
            raise self.error(f"missing {stack[-1]!r}", start)
        value = text[start:self.pos].strip()
        if not value and not allow_empty:
            raise self.error("expected a value")
        return value

    def _skip_string(self, pos: int) -> int:
        text, n = self.text, len(self.text)
        pos += 1
        while pos < n:
            if text[pos] == "\\":
                pos += 2
                continue
            if text[pos] == '"':
                return pos + 1
            if text[pos] == "\n":
                break
            pos += 1
        raise self.error("unterminated string", pos)

    def string(self) -> str:
        """A double-quoted string with backslash escapes."""
        self.skip_ws()
        if self.peek() != '"':
            raise self.error("expected a quoted string")
        end = self._skip_string(self.pos)
        body = self.text[self.pos + 1:end - 1]
        self.pos = end
        return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)),
                      body)

    # -- shapes
    def shape_ahead(self) -> bool:
        """Whether a shape starts here (an element type followed by `[`, or `(`)."""
        self.skip_ws()
        if self.peek() == "(":
            return True
        # A word directly followed by `[` is a shape (an opcode is followed by `(`); an
        # unknown element type is then reported by shape().
        return bool(re.match(r"[a-z][a-z0-9]*\[", self.text[self.pos:self.pos + 24]))

    def shape(self) -> Shape:
        """`f32[4,8]{1,0}`, `f32[<=4]`, `f32[8]{0:T(128)}`, `(f32[], s32[4]{0})`, `token[]`."""
        self.skip_ws()
        if self.accept("("):
            members = []
            if not self.accept(")"):
                while True:
                    members.append(self.shape())
                    if self.accept(")"):
                        break
                    self.expect(",", "',' or ')' in a tuple shape")
            return Shape.tuple(members)
        start = self.pos
        et = self.match(re.compile(r"[a-z][a-z0-9]*"), "an element type")
        if et not in _SHAPE_TYPES:
            raise self.error(f"unknown element type {et!r}", start)
        self.expect("[", "'[' after the element type")
        dims: list[int] = []
        if not self.accept("]"):
            while True:
                self.accept("<=")
                dims.append(self.integer("a dimension size"))
                if self.accept("]"):
                    break
                self.expect(",", "',' or ']' in a shape")
        layout = None
        if self.text.startswith("{", self.pos):
            layout = self._layout(len(dims))
        if et not in ELEMENT_TYPES and et != "token":
            raise self.error(f"element type {et!r} is not supported", start)
        if layout is not None and layout == tuple(range(len(dims) - 1, -1, -1)):
            layout = None
        return Shape(et, tuple(dims), layout)

    def _layout(self, rank: int) -> tuple[int, ...] | None:
        start = self.pos
        self.expect("{")
        minor_to_major: list[int] = []
        while self.peek() not in ("}", ":", ""):
            minor_to_major.append(self.integer("a layout dimension"))
            if not self.accept(","):
                break
        if self.accept(":"):  # tiling, memory space, ...: skip, keep minor_to_major only
            depth = 1
            while self.pos < len(self.text) and depth:
                c = self.text[self.pos]
                depth += {"{": 1, "}": -1}.get(c, 0)
                self.pos += 1
        else:
            self.expect("}", "'}' closing the layout")
        if not minor_to_major:
            return None
        if sorted(minor_to_major) != list(range(rank)):
            raise self.error(f"layout {{{minor_to_major}}} is not a permutation of the "
                             f"{rank} dimensions", start)
        return tuple(minor_to_major)

    # -- literals
    def literal(self, shape: Shape) -> np.ndarray:
        """A constant's value of `shape`: scalar, or nested `{...}` lists in row-major order."""
        start = self.pos
        values: list = []
        self._literal_values(values, shape.element_type)
        if shape.is_tuple:
            raise self.error("tuple constants are not supported", start)
        dtype = shape.dtype
        if values == ["..."]:
            raise self.error("the constant's values were elided ({...}) when this HLO was "
                             "printed, so it cannot be run; print or dump it with large "
                             "constants included (XLA: --xla_dump_large_constants)", start)
        if len(values) != shape.size:
            raise self.error(f"constant has {len(values)} values but shape "
                             f"{shape.element_type}{list(shape.dims)} needs {shape.size}", start)
        try:
            arr = np.array(values, dtype=dtype)
        except (ValueError, OverflowError) as e:
            raise self.error(f"bad constant value for {shape.element_type}: {e}", start) from None
        return arr.reshape(shape.dims)

    def _literal_values(self, out: list, et: str) -> None:
        self.skip_ws()
        if self.accept("{"):
            if self.accept("..."):
                self.expect("}")
                out.append("...")
                return
            if self.accept("}"):
                return
            while True:
                self._literal_values(out, et)
                if self.accept("}"):
                    return
                self.expect(",", "',' or '}' in a constant")
        elif self.peek() == "(" and et in ("c64", "c128"):
            self.expect("(")
            re_part = self._number(et)
            self.expect(",")
            im_part = self._number(et)
            self.expect(")")
            out.append(complex(re_part, im_part))
        else:
            out.append(self._number(et))

    def _number(self, et: str):
        self.skip_ws()
        start = self.pos
        if et == "pred":
            if self.accept("true"):
                return True
            if self.accept("false"):
                return False
            tok = self.match(_INT_RE, "true or false")
            return bool(int(tok))
        tok = self.match(_NUMBER_RE, "a number")
        if et[0] in "fbc":  # f16, bf16, f32, f64, the f8/f4 types, c64, c128
            low = tok.lower()
            if "nan" in low:
                return float("-nan") if low.startswith("-") else float("nan")
            if "0x" in low:
                return float(int(low.replace("0x", ""), 16))
            return float(tok)
        try:
            return int(tok, 0) if "0x" in tok.lower() else int(tok)
        except ValueError:
            raise self.error(f"expected an integer for {et}, found {tok!r}", start) from None
