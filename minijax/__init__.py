"""minijax: a small, hackable JAX-like array library with its own XLA-style compiler.

Use it as JAX: `import minijax as jax, minijax.numpy as jnp`.
"""

from minijax import distributed, errors, lax, numpy, tree, tree_util
from minijax.ad_checkpoint import checkpoint, checkpoint_policies, remat
from minijax.api import (
    ShapeDtypeStruct,
    eval_shape,
    grad,
    jvp,
    linearize,
    make_jaxpr,
    value_and_grad,
    vjp,
    vmap,
)
from minijax.api_jacobians import hessian, jacfwd, jacrev
from minijax.api_jit import disable_jit, jit
from minijax.api_pmap import pmap
from minijax.api_shard_map import shard_map
from minijax.array import Array
from minijax.backends.base import Device
from minijax.compiler.cache import clear_caches
from minijax.config import config
from minijax.custom_derivatives import custom_jvp, custom_vjp
from minijax.devices import (
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    live_arrays,
    local_device_count,
    local_devices,
    process_count,
    process_index,
)
from minijax.sharding import Shard, make_mesh
from minijax.version import __version__ as __version__
from minijax.version import __version_info__ as __version_info__

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "clear_caches", "config",
    "default_backend", "device_get", "device_put", "devices", "disable_jit", "errors",
    "eval_shape", "grad", "hessian", "jacfwd", "jacrev", "jit", "jvp", "lax",
    "linearize", "local_devices", "make_jaxpr", "numpy", "tree", "tree_util", "value_and_grad",
    "vjp", "vmap", "Device",
]
__all__ += ["Shard", "live_arrays"]
__all__ += ["device_count", "distributed", "local_device_count", "make_mesh", "pmap",
            "process_count", "process_index", "shard_map", "sharding"]
__all__ += ["checkpoint", "checkpoint_policies", "custom_jvp", "custom_vjp", "remat"]

# User-facing libraries built on the API above (imported last: they use it).
from minijax import (  # noqa: E402
    debug,
    example_libraries,
    flatten_util,
    nn,
    random,
    scipy,
    sharding,
)

__all__ += ["debug", "example_libraries", "flatten_util", "nn", "random", "scipy"]

# Host callbacks with results, jax.typing, jax.experimental; jax.jacobian is jacrev.
from minijax import experimental, typing  # noqa: E402
from minijax.callback import pure_callback  # noqa: E402

jacobian = jacrev
__all__ += ["experimental", "jacobian", "pure_callback", "typing"]

# jax.image, jax.ops, mutable array references (jax.new_ref, jax.Ref, jax.ref.*), jax.typeof.
from minijax import image, ops, ref  # noqa: E402
from minijax.dtypes import float0  # noqa: E402
from minijax.ref import Ref, freeze, new_ref, typeof  # noqa: E402
from minijax.sharding import NamedSharding  # noqa: E402
from minijax.sharding import PartitionSpec as P  # noqa: E402

__all__ += ["NamedSharding", "P", "Ref", "float0", "freeze", "image", "new_ref", "ops", "ref",
            "typeof"]


# configuration context managers, environment helpers, more transformations and array
# constructors (api_config.py, api.py, custom_derivatives.py, devices.py)
from minijax import profiler, stages  # noqa: E402
from minijax.api import linear_transpose, named_call  # noqa: E402
from minijax.api_config import (  # noqa: E402
    debug_infs,
    debug_nans,
    default_device,
    default_matmul_precision,
    enable_checks,
    enable_x64,
    ensure_compile_time_eval,
    explain_cache_misses,
    host_count,
    host_id,
    host_ids,
    log_compiles,
    named_scope,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    print_environment_info,
    process_indices,
    transfer_guard,
    transfer_guard_device_to_device,
    transfer_guard_device_to_host,
    transfer_guard_host_to_device,
)
from minijax.custom_derivatives import closure_convert, custom_gradient  # noqa: E402
from minijax.global_arrays import (  # noqa: E402
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)

__all__ += [
    "closure_convert", "custom_gradient", "debug_infs", "debug_nans", "default_device",
    "default_matmul_precision", "enable_checks", "enable_x64", "ensure_compile_time_eval",
    "explain_cache_misses", "host_count", "host_id", "host_ids", "linear_transpose",
    "log_compiles", "make_array_from_callback", "make_array_from_process_local_data",
    "make_array_from_single_device_arrays",
    "named_call", "named_scope", "numpy_dtype_promotion", "numpy_rank_promotion",
    "print_environment_info", "process_indices", "profiler", "stages", "transfer_guard",
    "transfer_guard_device_to_device", "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
]


def __getattr__(name):
    # minijax.aot needs llvmlite; import it only when first used.
    if name == "aot":
        import importlib
        return importlib.import_module("minijax.aot")
    raise AttributeError(f"module 'minijax' has no attribute {name!r}")
