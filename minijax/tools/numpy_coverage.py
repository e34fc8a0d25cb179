"""Which names of NumPy's main namespace minijax.numpy provides.

    python -m minijax.tools.numpy_coverage [--format markdown|text] [--missing-only]

Prints a table (Markdown by default, for the README): every public NumPy name with its
status: `yes` (minijax.numpy has it), `hint` (missing, but using it raises an error that
names an alternative), `no` (missing) or `n/a` (outside an array library's scope: file I/O,
printing, datetimes, NumPy internals; JAX does not provide these either).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import minijax.numpy as jnp
from minijax.numpy._missing import ALTERNATIVES
from minijax.tools.api_coverage import public_names

# Names that belong to NumPy's host-side machinery rather than to an array API.
_OUT_OF_SCOPE = {
    "array2string", "array_repr", "array_str", "base_repr", "binary_repr", "busday_count",
    "busday_offset", "busdaycalendar", "char", "core", "ctypeslib", "datetime64",
    "datetime_as_string", "datetime_data", "dtypes", "emath", "errstate", "exceptions", "f2py",
    "format_float_positional", "format_float_scientific", "fromfile", "frompyfunc",
    "fromregex", "genfromtxt", "get_include", "getbufsize", "geterr", "geterrcall", "info",
    "is_busday", "isfortran", "isnat", "lib", "little_endian", "loadtxt", "ma", "matrix",
    "asmatrix", "bmat", "may_share_memory", "memmap", "nditer", "nested_iters", "ndenumerate",
    "ndindex", "flatiter", "rec", "recarray", "record", "require", "savetxt", "savez",
    "savez_compressed", "setbufsize", "seterr", "seterrcall", "shares_memory", "show_config",
    "show_runtime", "strings", "test", "testing", "timedelta64", "typecodes", "typename",
    "typing", "ScalarType", "sctypeDict", "mintypecode", "common_type", "min_scalar_type",
    "asfortranarray", "ascontiguousarray", "asanyarray", "asarray_chkfinite", "object_",
    "str_", "bytes_", "void", "random", "polynomial", "poly1d", "long", "longlong", "ulong",
    "ulonglong", "longdouble", "clongdouble", "float128", "complex256", "intc", "uintc",
    "short", "ushort", "byte", "ubyte", "False_", "True_", "real_if_close",
}


def numpy_names() -> list[str]:
    """Public names of NumPy's main namespace."""
    return public_names(np)


def coverage() -> list[tuple[str, str]]:
    """(name, status) for every public NumPy name."""
    rows = []
    for name in numpy_names():
        if hasattr(jnp, name):
            status = "yes"
        elif name in ALTERNATIVES:
            status = "hint"
        elif name in _OUT_OF_SCOPE:
            status = "n/a"
        else:
            status = "no"
        rows.append((name, status))
    return rows


def render(rows, fmt: str = "markdown", all_rows=None) -> str:
    """The table as Markdown or as plain aligned text, after a summary line (counted over
    `all_rows`, default `rows`)."""
    counted = rows if all_rows is None else all_rows
    counts = {s: sum(1 for _, st in counted if st == s) for s in ("yes", "hint", "no", "n/a")}
    in_scope = counts["yes"] + counts["hint"] + counts["no"]
    summary = (f"minijax.numpy provides {counts['yes']} of {in_scope} in-scope NumPy names "
               f"({counts['hint']} more raise an error naming an alternative, "
               f"{counts['no']} are missing, {counts['n/a']} are out of scope).")
    if fmt == "text":
        width = max((len(n) for n, _ in rows), default=4)
        return "\n".join([summary] + [f"{n:<{width}}  {s}" for n, s in rows])
    lines = [summary, "", "| NumPy name | minijax.numpy |", "|---|---|"]
    lines += [f"| `{n}` | {s} |" for n, s in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("markdown", "text"), default="markdown")
    parser.add_argument("--missing-only", action="store_true",
                        help="list only names that are missing (status no or hint)")
    args = parser.parse_args(argv)
    all_rows = coverage()
    rows = all_rows
    if args.missing_only:
        rows = [(n, s) for n, s in rows if s in ("no", "hint")]
    sys.stdout.write(render(rows, args.format, all_rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
