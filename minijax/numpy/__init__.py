"""minijax.numpy: NumPy's API (as jax.numpy) written in terms of minijax.lax.

Importing this package installs operators and NumPy-style methods on minijax.Array and
on tracers (minijax/numpy/array_methods.py).

Imports flow one way: the concrete modules (creation, manipulation, ufuncs, ...) build on
each other; base.py gathers their public names (the core of this namespace); the modules
built on top (einsum & contractions, linalg, sorting/searching/sets, signals & covariance,
and the less common functions of extras*.py and functional.py) import base.py as `jnp`;
this package imports all of them, and no submodule imports this package.
"""

from minijax.lax.out_sharding import accepts_out_sharding as _accepts_out_sharding
from minijax.numpy import array_methods as _array_methods
from minijax.numpy import einsum_ops as _einsum_ops
from minijax.numpy import extras as _extras
from minijax.numpy import extras_index as _extras_index
from minijax.numpy import extras_poly as _extras_poly
from minijax.numpy import fft, linalg  # noqa: F401  (jnp.fft, jnp.linalg)
from minijax.numpy import functional as _functional
from minijax.numpy import host_io as _host_io
from minijax.numpy import signal_stats as _signal_stats
from minijax.numpy import sorting_searching as _sorting_searching
from minijax.numpy._missing import missing_attribute as _missing_attribute
from minijax.numpy.base import *  # noqa: F403  (the core of the namespace)
from minijax.numpy.base import __array_namespace_info__  # noqa: F401  (not in a star import)

# The less common functions; the core's names take precedence.
for _mod in (_einsum_ops, _sorting_searching, _signal_stats, _extras, _extras_index,
             _extras_poly, _functional, _host_io):
    for _name in _mod.__all__:
        globals().setdefault(_name, getattr(_mod, _name))
del _einsum_ops, _sorting_searching, _signal_stats, _mod, _name
del _extras, _extras_index, _extras_poly, _functional, _host_io

# The functions that take JAX's out_sharding keyword (validated and applied to the result;
# the modules of this package call the plain functions).
for _name in ("arange", "array", "asarray", "bincount", "broadcast_to", "empty", "full",
              "full_like", "ones", "ones_like", "ravel", "repeat", "reshape", "tensordot",
              "zeros", "zeros_like"):
    globals()[_name] = _accepts_out_sharding(globals()[_name])
del _name
del _array_methods, _accepts_out_sharding


def __getattr__(name):
    """Unknown names: NotImplementedError with an alternative for common NumPy functions."""
    return _missing_attribute(name)
