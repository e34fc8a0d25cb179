"""Where in the user's code an operation came from.

Every staged equation records the innermost stack frame outside the minijax package, so
errors, jaxprs, HLO metadata and kernel names can point at the user's line.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

# This file sits at the top of the minijax package: its directory is the package's.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TEST_MARKER = os.sep + "tests" + os.sep


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """A user source location: file, line and function name."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} ({self.function})"

    def short(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"


UNKNOWN = SourceInfo("<unknown>", 0, "<unknown>")


# Path prefixes of libraries built on minijax whose frames are not the user's either
# (register_exclusion, JAX's hook; flax and equinox register themselves).
_excluded: list[str] = []


def register_exclusion(path: str) -> None:
    """Treat frames from files under ``path`` as library frames, not the user's."""
    _excluded.append(path)


def _is_internal(filename: str) -> bool:
    return (filename.startswith(_PACKAGE_DIR) or filename.startswith("<frozen")
            or (bool(_excluded) and filename.startswith(tuple(_excluded))))


def user_frame_info(skip: int = 1) -> SourceInfo:
    """The first frame outside minijax, walking outward from the caller."""
    frame = sys._getframe(skip)
    while frame is not None:
        code = frame.f_code
        if not _is_internal(code.co_filename):
            return SourceInfo(code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return UNKNOWN


def is_internal_file(filename: str) -> bool:
    """True for files inside the minijax package (used to filter tracebacks)."""
    return _is_internal(filename)
