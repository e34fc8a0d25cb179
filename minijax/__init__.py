"""minijax: a small, hackable JAX-like array library with its own XLA-style compiler.

Use it as JAX: `import minijax as jax, minijax.numpy as jnp`.
"""

__version__ = "0.1.0"

from minijax import errors, lax, numpy, tree, tree_util
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
from minijax.api_jacobians import jacrev as jacobian
from minijax.api_jit import disable_jit, jit
from minijax.array import Array
from minijax.backends.base import Device
from minijax.compiler.cache import clear_caches
from minijax.config import config
from minijax.custom_derivatives import (
    checkpoint,
    checkpoint_policies,
    custom_jvp,
    custom_vjp,
    remat,
)
from minijax.devices import (
    block_until_ready,
    default_backend,
    device_get,
    device_put,
    devices,
    local_devices,
)

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "clear_caches", "config",
    "default_backend", "device_get", "device_put", "devices", "disable_jit", "errors",
    "eval_shape", "grad", "hessian", "jacfwd", "jacobian", "jacrev", "jit", "jvp", "lax",
    "linearize", "local_devices", "make_jaxpr", "numpy", "tree", "tree_util", "value_and_grad",
    "vjp", "vmap", "Device",
]
__all__ += ["checkpoint", "checkpoint_policies", "custom_jvp", "custom_vjp", "remat"]

# User-facing libraries built on the API above (imported last: they use it).
from minijax import debug, example_libraries, flatten_util, nn, random, scipy  # noqa: E402

__all__ += ["debug", "example_libraries", "flatten_util", "nn", "random", "scipy"]


def __getattr__(name):
    # minijax.aot needs llvmlite; import it only when first used.
    if name == "aot":
        import importlib
        return importlib.import_module("minijax.aot")
    raise AttributeError(f"module 'minijax' has no attribute {name!r}")
