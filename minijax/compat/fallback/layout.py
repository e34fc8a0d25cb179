"""``jax.experimental.layout``: :class:`Format` pairs a memory layout with a sharding.

minijax arrays are row-major on one device, so a Format only carries the two values (for
libraries that build, match and rebuild them)."""

from __future__ import annotations

__all__ = ["Format", "Layout"]


class Layout:
    """A memory layout: ``major_to_minor`` dimension order (None: the default)."""

    def __init__(self, major_to_minor=None):
        self.major_to_minor = None if major_to_minor is None else tuple(major_to_minor)

    def __repr__(self):
        return f"Layout(major_to_minor={self.major_to_minor})"


class Format:
    """A layout together with a sharding."""

    def __init__(self, layout=None, sharding=None):
        self.layout, self.sharding = layout, sharding

    def __repr__(self):
        return f"Format({self.layout!r}, {self.sharding!r})"
