"""minijax's version, in a leaf module: the compiler's caches and dumps key on it, and the
compiler must not import the package namespace (minijax/__init__.py) that imports it."""

__version__ = "0.1.0"
__version_info__ = (0, 1, 0)
