"""Filtered tracebacks, as JAX's: an error raised through one of minijax's entry points (jit,
grad, vmap, ...) shows the user's frames, not minijax's internal ones between them.

`MINIJAX_TRACEBACK_FILTERING=off` (or `config.update("jax_traceback_filtering", "off")`)
shows every frame. The frames after the last user frame (where the error was raised) are
kept, so the failing operation stays visible.
"""

from __future__ import annotations

import functools
import os
import types

from minijax.config import config

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
NOTE = ("--------------------\nFor simplicity, minijax has removed its internal frames from "
        "the traceback of the following exception. Set MINIJAX_TRACEBACK_FILTERING=off to "
        "include these.")


# Path prefixes whose frames are hidden: minijax's package, and what libraries register.
_excluded: list[str] = [_PACKAGE_DIR]


def register_exclusion(path: str) -> None:
    """Hide frames from files under ``path`` too (JAX's hook for libraries built on it)."""
    _excluded.append(path)


def include_frame(frame) -> bool:
    """Whether a filtered traceback keeps ``frame``."""
    return not frame.f_code.co_filename.startswith(tuple(_excluded))


def _is_internal(tb) -> bool:
    return not include_frame(tb.tb_frame)


def filter_traceback(tb):
    """`tb` without minijax's frames that come before the last user frame."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    last_user = max((i for i, t in enumerate(entries) if not _is_internal(t)), default=-1)
    kept = [t for i, t in enumerate(entries) if i > last_user or not _is_internal(t)]
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def api_boundary(fun):
    """Decorate a public entry point: exceptions leave it with a filtered traceback."""

    @functools.wraps(fun)
    def reraise_with_filtered_traceback(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - read by pytest and IPython
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            if config._values["jax_traceback_filtering"] == "off":
                raise
            e.__traceback__ = filter_traceback(e.__traceback__)
            if NOTE not in getattr(e, "__notes__", ()):
                e.add_note(NOTE)
            raise
    return reraise_with_filtered_traceback
