"""``jax.extend.source_info_util``: where in the user's code an operation came from."""

from __future__ import annotations

import contextlib

from minijax.source_info import SourceInfo, is_internal_file, register_exclusion, user_frame_info

__all__ = ["SourceInfo", "current", "is_user_filename", "register_exclusion",
           "transform_name_stack", "user_frame", "user_frame_info"]


def current() -> SourceInfo:
    """The user's innermost source location now."""
    return user_frame_info(2)


def user_frame(source_info: SourceInfo) -> SourceInfo:
    """The user frame of ``source_info`` (minijax records user frames only)."""
    return source_info


def is_user_filename(filename: str) -> bool:
    """Whether ``filename`` is outside minijax."""
    return not is_internal_file(filename)


@contextlib.contextmanager
def transform_name_stack(name: str):
    """Name a transformation in op names (minijax records none; the block just runs)."""
    del name
    yield
