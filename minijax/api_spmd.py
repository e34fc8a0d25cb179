"""The engine under pmap and shard_map: trace a per-device function under named device
axes, lower it to one HLO module with XLA's collectives, compile it once, and run it on
every device of a mesh at once (backends/spmd.py).

`SpmdProgram` is one compiled program for one signature: `run(per_device_leaves)` returns
each device's flat outputs as host arrays. Programs are cached by the callers (pmap,
shard_map) per signature.
"""

from __future__ import annotations

import functools

import numpy as np

from minijax import core, placement
from minijax.backends import transport as processes
from minijax.backends.spmd import run_spmd
from minijax.backends.transport.cross_process import spmd_transport
from minijax.compiler import driver
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.compiler.options import CompileOptions
from minijax.interpreters import axis_env
from minijax.interpreters.partial_eval import trace_to_jaxpr
from minijax.lax.vmap import vmap


class SpmdProgram:
    """A per-device function traced, lowered and compiled for a mesh of devices."""

    def __init__(self, flat_fun, in_avals, axis_names, axis_sizes, devices, name: str,
                 arg_names=None, participants=None):
        self.devices = list(devices)
        # Multi-process runs: the global ids of `devices` among the program's participants
        # (the product of the axis sizes); the others run in the other processes.
        self.participants = participants
        self.axis_names, self.axis_sizes = tuple(axis_names), tuple(axis_sizes)
        with axis_env.spmd_axes(axis_names, axis_sizes):
            self.jaxpr, _ = trace_to_jaxpr(flat_fun, list(in_avals), arg_names=arg_names,
                                           fun_name=name, purpose=name)
            self.module, self.hoisted = lower_jaxpr_to_module(self.jaxpr, name, name)
        # Imported here: `import minijax` loads no compiler pass.
        from minijax.compiler.passes.all_reduce_combiner import AllReduceCombiner
        self.lowered_text = module_to_text(self.module)
        AllReduceCombiner().run(self.module)
        self.backend = placement.backend_of(self.devices[0])
        options = CompileOptions(backend=self.backend.name,
                                 **self.backend.device_program_options(len(self.devices)))
        self.executable, self.optimized = driver.compile_module(self.module, self.backend,
                                                                options)
        self.out_avals = list(self.jaxpr.out_avals)

    def run(self, per_device_leaves: list) -> list:
        """Run on each device's flat arguments; returns each device's flat outputs."""
        hoisted = [np.asarray(h) for h in self.hoisted]
        args = [list(leaves) + hoisted for leaves in per_device_leaves]
        if self.participants is None:
            outs = run_spmd(self.backend, self.executable, self.devices, args)
        else:
            size = int(np.prod(self.axis_sizes))
            link = spmd_transport(self.participants, size, processes.current())
            outs = run_spmd(self.backend, self.executable, self.devices, args, link,
                            self.participants, size)
        return [[placement.to_host(o) for o in dev] for dev in outs]

    def as_text(self) -> str:
        """The HLO text as lowered, before any pass (collectives with replica groups)."""
        return self.lowered_text


def device_axis_vmap(fun, in_axes, out_axes, axis_name, axis_size=None):
    """`vmap(fun, ..., axis_name=axis_name)` standing for pmap / shard_map under an outer
    transformation (jit, grad, vmap): the same values on one device. Its axis is a device
    axis, so collectives over it accept `axis_index_groups`, as they do in JAX's pmap."""
    @functools.wraps(fun)
    def on_device_axis(*args, **kwargs):
        core.current_trace().spmd = True        # the BatchTrace this vmap just made
        return fun(*args, **kwargs)
    return vmap(on_device_axis, in_axes, out_axes, axis_name=axis_name, axis_size=axis_size)
