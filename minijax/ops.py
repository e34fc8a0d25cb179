"""``jax.ops``: segment reductions.

``segment_sum(data, segment_ids, num_segments)`` reduces the rows of ``data`` (its leading
axis) that share a segment id: ``out[s] = sum(data[i] for i where segment_ids[i] == s)``.
Segments without rows hold the reduction's identity (0, 1, -inf / the integer minimum for
max, +inf / the integer maximum for min); rows whose id is outside ``[0, num_segments)``
are dropped. They are scatters (``out.at[segment_ids].add(data)``), so they work under
``jit``, ``vmap`` and ``grad`` like any other indexed update.
"""

from __future__ import annotations

import numpy as np

from minijax import core, dtypes
from minijax import numpy as jnp
from minijax.errors import ConcretizationTypeError

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _identity(kind: str, dtype) -> object:
    dtype = np.dtype(dtype)
    if kind == "add":
        return np.zeros((), dtype)
    if kind == "mul":
        return np.ones((), dtype)
    big = kind == "min"
    if dtypes.issubdtype(dtype, np.floating):
        return np.array(np.inf if big else -np.inf, dtype)
    if dtype == np.bool_:
        return np.array(big, dtype)
    info = np.iinfo(dtype)
    return np.array(info.max if big else info.min, dtype)


def _num_segments(segment_ids, num_segments) -> int:
    if num_segments is not None:
        try:
            return int(num_segments)
        except (TypeError, ConcretizationTypeError) as err:
            raise ConcretizationTypeError(
                "segment reductions need a static num_segments (a Python int); it sets the "
                "output shape") from err
    if isinstance(segment_ids, core.Tracer) and segment_ids.to_concrete_value() is None:
        raise ConcretizationTypeError(
            "segment reductions with num_segments=None take the number of segments from "
            "max(segment_ids) + 1, which must be known at trace time; pass num_segments=N "
            "inside jit.")
    ids = np.asarray(segment_ids)
    return int(ids.max()) + 1 if ids.size else 0


def _segment_reduce(name, kind, data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode):
    data = jnp.asarray(data)
    segment_ids = jnp.asarray(segment_ids)
    if data.ndim == 0:
        raise TypeError(f"{name}: data must have at least one dimension (the rows to "
                        "reduce), got a scalar.")
    if segment_ids.ndim != 1 or segment_ids.shape[0] != data.shape[0]:
        raise ValueError(f"{name}: segment_ids must be 1-D with one id per row of data; got "
                         f"segment_ids of shape {segment_ids.shape} for data of shape "
                         f"{data.shape}.")
    if not dtypes.issubdtype(segment_ids.dtype, np.integer):
        raise TypeError(f"{name}: segment_ids must be integers, got {segment_ids.dtype}.")
    if mode not in (None, "drop", "fill", "promise_in_bounds", "clip"):
        raise ValueError(f"{name}: unknown mode {mode!r}.")
    n = _num_segments(segment_ids, num_segments)
    out = jnp.full((n, *data.shape[1:]), _identity(kind, data.dtype), data.dtype)
    if mode != "clip":  # negative ids are out of range (dropped), not counted from the end
        segment_ids = jnp.where(segment_ids < 0, n, segment_ids)
    kwargs = {"indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices,
              "mode": "clip" if mode == "clip" else "drop"}
    if bucket_size is None or data.shape[0] == 0:
        return getattr(out.at[segment_ids], kind)(data, **kwargs)
    # Reduce each bucket of rows on its own, then combine the buckets' results (JAX's order).
    partials = [getattr(out.at[segment_ids[i:i + bucket_size]], kind)(
        data[i:i + bucket_size], **kwargs) for i in range(0, data.shape[0], bucket_size)]
    combine = {"add": jnp.sum, "mul": jnp.prod, "max": jnp.max, "min": jnp.min}[kind]
    return combine(jnp.stack(partials), axis=0)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Sum of the rows of ``data`` in each segment (0 for empty segments)."""
    return _segment_reduce("segment_sum", "add", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
    """Product of the rows of ``data`` in each segment (1 for empty segments)."""
    return _segment_reduce("segment_prod", "mul", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Maximum of the rows of ``data`` in each segment (-inf, or the integer minimum, for
    empty segments)."""
    return _segment_reduce("segment_max", "max", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Minimum of the rows of ``data`` in each segment (+inf, or the integer maximum, for
    empty segments)."""
    return _segment_reduce("segment_min", "min", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, mode)
