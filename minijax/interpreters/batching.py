"""Vectorization (vmap): a BatchTrace carries a batch dimension on each of its values.

Each primitive's batching rule (table `primitive_batchers`) receives the unbatched-layout
values and, per argument, the index of its batch dimension (or `not_mapped`), and returns
the output value(s) and their batch dimension(s). Rules run with the parent trace current.
Helpers that move or add batch dimensions live in minijax.lax (they bind lax primitives).
"""

from __future__ import annotations

from minijax import core
from minijax.core import ShapedArray, Tracer, get_aval, set_current_trace

primitive_batchers: dict = {}
not_mapped = None


class BatchTracer(Tracer):
    """A batched value: `val` has the batch axis at `batch_dim` (or none if not_mapped)."""

    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: BatchTrace, val, batch_dim):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        aval = get_aval(self.val)
        if self.batch_dim is not_mapped:
            return aval
        shape = list(aval.shape)
        del shape[self.batch_dim]
        return aval.update(shape=tuple(shape))

    def origin_description(self):
        val = self.val
        if isinstance(val, Tracer):
            return val.origin_description()
        return ("The value is batched by vmap: each element of the batch has its own value, "
                "so it cannot be a single Python value. Use jnp.where or lax.cond instead.")


class BatchTrace(core.Trace):
    """Applies batching rules to every primitive bound while it is current."""

    # True when this vmap runs a pmap/shard_map body under an outer transformation: its
    # axis is a device axis, so collectives over it accept axis_index_groups (as in JAX).
    spmd = False

    def __init__(self, parent, axis_size: int, axis_name=None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def __repr__(self) -> str:
        name = f", axis_name={self.axis_name}" if self.axis_name is not None else ""
        return f"vmap(axis_size={self.axis_size}{name})"

    def to_val_dim(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        return x, not_mapped

    def process_primitive(self, primitive, args, params):
        vals, dims = [], []
        for x in args:
            v, d = self.to_val_dim(x)
            vals.append(v)
            dims.append(d)
        if all(d is not_mapped for d in dims) and not _uses_axis(self, params):
            with set_current_trace(self.parent):
                return primitive.bind(*vals, **params)
        rule = primitive_batchers.get(primitive)
        if rule is None:
            raise NotImplementedError(
                f"Batching rule for '{primitive.name}' not implemented (vmap).")
        with set_current_trace(self.parent):
            out, out_dim = rule(self, vals, dims, **params)
        if primitive.multiple_results:
            return [self._wrap(o, d) for o, d in zip(out, out_dim, strict=True)]
        return self._wrap(out, out_dim)

    def _wrap(self, val, dim):
        if dim is not_mapped:
            return val
        return BatchTracer(self, val, dim)


def _uses_axis(trace: BatchTrace, params) -> bool:
    """Collectives over this trace's axis name must see the batch even if nothing is mapped
    (also when they sit inside a higher-order primitive's jaxpr, e.g. a cond branch)."""
    if trace.axis_name is None or not params:
        return False
    return _params_use_axis(params, trace.axis_name)


def _params_use_axis(params, axis_name) -> bool:
    name = params.get("axis_name")
    if name is not None and axis_name in (name if isinstance(name, tuple) else (name,)):
        return True
    return any(_value_uses_axis(v, axis_name) for v in params.values())


def _value_uses_axis(value, axis_name) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_value_uses_axis(v, axis_name) for v in value)
    jaxpr = value.jaxpr if isinstance(value, core.ClosedJaxpr) else value
    if isinstance(jaxpr, core.Jaxpr):
        return any(_params_use_axis(e.params, axis_name) for e in jaxpr.eqns if e.params)
    return False


def find_axis_trace(axis_name) -> BatchTrace:
    """The innermost BatchTrace with `axis_name`, searching through parent traces."""
    trace = core.current_trace()
    bound = []
    while trace is not None:
        if isinstance(trace, BatchTrace) and trace.axis_name is not None:
            if trace.axis_name == axis_name:
                return trace
            bound.append(trace.axis_name)
        trace = trace.parent
    raise NameError(f"unbound axis name: {axis_name}. The following axis names (e.g. defined "
                    f"by vmap's axis_name) are available to collective operations: {bound}. "
                    "Collectives such as lax.psum need an enclosing vmap(..., axis_name=...) "
                    "with that name.")
