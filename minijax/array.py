"""minijax.Array: an immutable array backed by a device buffer.

Host backends (interpreter, cpu) keep the buffer as a NumPy array; other backends keep
device memory, copied to the host only by np.asarray / item / printing. The operators and
NumPy-style methods are installed by minijax.numpy (they are shared with tracers).
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes, placement
from minijax.core import ShapedArray
from minijax.errors import immutability_error
from minijax.sharding import Shard, SingleDeviceSharding


class Array:
    """An immutable n-dimensional array (`jax.Array`).

    Create arrays with minijax.numpy (`jnp.array`, `jnp.zeros`, ...). Arrays support
    NumPy's operators and methods; updates are functional: `x.at[i].set(v)`.

    Internally an Array is a device buffer (`_buf`: an np.ndarray on host backends, a
    backends.base.Buffer elsewhere), its aval, its device (`_device`; None for an
    uncommitted NumPy buffer on the host default device) and whether it is committed to
    that device (see minijax.placement).
    """

    # `_sharding` is set only on arrays laid out over several devices (see sharded()).
    __slots__ = ("_buf", "aval", "_device", "_committed", "_sharding", "__weakref__")
    #: Whether sharded() made one in this process (jit looks for them only then).
    any_sharded = False
    __array_priority__ = 100

    def __init__(self, value, weak_type: bool = False, device=None, committed: bool = False):
        self._buf = value
        self.aval = ShapedArray(value.shape, value.dtype, weak_type)
        self._device = device
        self._committed = committed

    # ----- metadata
    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    itemsize = property(lambda self: self.aval.dtype.itemsize)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

    @property
    def device(self):
        """The device holding this array's buffer."""
        return self._device or placement.host_device()

    def devices(self) -> set:
        """The set of devices holding parts of this array."""
        sharding = getattr(self, "_sharding", None)
        return {self.device} if sharding is None else sharding.device_set

    @property
    def sharding(self):
        """How the array is laid out over devices (a minijax.sharding.Sharding)."""
        sharding = getattr(self, "_sharding", None)
        return SingleDeviceSharding(self.device) if sharding is None else sharding

    @property
    def addressable_shards(self) -> list:
        """This process's parts, one per device: Shards whose `data` is an Array committed
        to that device (views of the host buffer on host backends)."""
        buf = self._buf
        local = buf.shards if type(buf) is ProcessShards else None
        value = self._value if local is None else None
        out, seen = [], {}
        for device, index in self.sharding.devices_indices_map(self.shape).items():
            key = tuple((s.start, s.stop) for s in index)
            replica = seen[key] = seen.get(key, -1) + 1
            if local is not None and device not in local:
                continue
            view = value[index] if local is None else local[device]
            buf = placement.transfer(view if view.flags.c_contiguous else np.array(view),
                                     None, device)
            out.append(Shard(device, index, replica, Array(buf, self.weak_type, device, True)))
        return out

    def addressable_data(self, index: int) -> Array:
        """The data of the `index`-th addressable shard."""
        return self.addressable_shards[index].data

    @property
    def committed(self) -> bool:
        """Whether the array was explicitly placed (device_put) on its device."""
        return self._committed

    @property
    def _value(self) -> np.ndarray:
        """The host NumPy contents (a copy from device memory on non-host backends)."""
        buf = self._buf
        if type(buf) is ProcessShards:
            return buf.value()
        return buf if type(buf) is np.ndarray else buf.to_host()

    # ----- host interop
    def __array__(self, dtype=None, copy=None):
        value = self._value
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        out = value.view()
        out.flags.writeable = False
        return out

    def to_py(self) -> np.ndarray:
        return np.asarray(self)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def block_until_ready(self) -> Array:
        """Wait until the value is computed (host backends compute synchronously)."""
        buf = self._buf
        if type(buf) is not np.ndarray:
            if type(buf) is _DeletedBuffer:
                buf._raise()
            buf.block_until_ready()
        return self

    def copy_to_host_async(self) -> None:
        """Start copying the value to the host (a no-op for host buffers)."""
        buf = self._buf
        if type(buf) is not np.ndarray:
            buf.copy_to_host_async()

    def delete(self) -> None:
        """Free the buffer (device memory now; host memory when unreferenced); any later
        use raises RuntimeError (as after donation)."""
        buf = self._buf
        if type(buf) is _DeletedBuffer:
            return
        if type(buf) is not np.ndarray:
            buf.delete()
        shape = ",".join(str(d) for d in self.shape)
        self._buf = _DeletedBuffer(f"{self.dtype.name}[{shape}]")

    def is_deleted(self) -> bool:
        """Whether the buffer was deleted (by `delete()` or by donating it to a jit call)."""
        return type(self._buf) is _DeletedBuffer

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every shard (False for an Array over the devices of
        several processes, whose other shards live in the other processes)."""
        return type(self._buf) is not ProcessShards

    # ----- Python protocol
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"The truth value of an array with shape {self.shape} is "
                             "ambiguous. Use a.any() or a.all().")
        return bool(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        if self.ndim != 0 or not dtypes.is_integer(self.dtype):
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._value)

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'. Arrays are not hashable; for static "
                        "arguments use tuples or Python scalars.")

    def __setitem__(self, index, value):
        raise immutability_error(self, index)

    def __reduce__(self):
        return (_reconstruct, (np.array(self._value), self.weak_type))

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def __str__(self) -> str:
        return str(self._value) if self._readable() else repr(self)

    def __repr__(self) -> str:
        if not self._readable():  # spread over processes: JAX prints the shape only
            weak = ", weak_type=True" if self.weak_type else ""
            return f"Array(shape={self.shape}, dtype={self.dtype.name}{weak})"
        return array_repr(self._value, self.weak_type)

    def _readable(self) -> bool:
        buf = self._buf
        return type(buf) is not ProcessShards or buf.replicated


class _DeletedBuffer:
    """Stands in for the buffer of a deleted Array: every use raises JAX's RuntimeError."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def _raise(self, *args, **kwargs):
        raise RuntimeError(f"Array has been deleted with shape={self.what}.")

    __array__ = __getitem__ = __len__ = __iter__ = __bool__ = __float__ = __int__ = _raise
    __complex__ = __index__ = __repr__ = __str__ = _raise

    def __getattr__(self, name):
        self._raise()


class NotAddressableError(RuntimeError):
    """The value of an Array spread over several processes was read in one of them."""


class ProcessShards:
    """The buffer of an Array laid out over the devices of several processes (a
    minijax.distributed run): this process's shards only, `shards[device]` a host array
    per local device of the sharding. The global value exists nowhere, so reading it
    raises JAX's RuntimeError (see minijax/global_arrays.py)."""

    __slots__ = ("shape", "dtype", "shards", "replicated")
    #: Whether any was made in this process (jit's slow path looks for them only then).
    made = False

    def __init__(self, shape: tuple, dtype, shards: dict, replicated: bool = False):
        ProcessShards.made = True
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.shards = shards
        self.replicated = replicated  # every device holds the whole value (readable here)

    def value(self) -> np.ndarray:
        """The global value when every device holds it (else raises, as to_host)."""
        if self.replicated and self.shards:
            return next(iter(self.shards.values()))
        return self.to_host()

    def to_host(self):
        """Raises: computations reading the buffer run partitioned instead (an eager op
        meeting this error reruns over every process, see dispatch.over_processes)."""
        raise NotAddressableError(
            "Fetching value for `jax.Array` that spans non-addressable (non process local) "
            "devices is not possible. You can use "
            "`jax.experimental.multihost_utils.process_allgather` to print the global array "
            "or use `.addressable_shards` method of jax.Array to inspect the addressable "
            "(process local) shards.")

    __array__ = to_host

    def block_until_ready(self) -> None:
        """Host shards are computed synchronously."""

    def copy_to_host_async(self) -> None:
        """Nothing to copy: the shards are host memory."""

    def delete(self) -> None:
        self.shards = {}


def _reconstruct(value, weak_type):
    return Array(value, weak_type)


def array_repr(value: np.ndarray, weak_type: bool) -> str:
    """`Array([1., 2.], dtype=float32)`, exactly as JAX prints arrays (also where its
    output is odd: when the dtype does not fit on the last line, JAX separates it by six
    spaces instead of one, on the same line)."""
    prefix = "Array("
    dtype_text = f"dtype={value.dtype.name}" + (", weak_type=True" if weak_type else "")
    if value.size == 0:
        body = f"[], shape={value.shape}"
    else:
        body = np.array2string(value, separator=", ", prefix=prefix, suffix=",",
                               max_line_width=np.get_printoptions()["linewidth"])
    last_line = len(body) - body.rfind("\n") + 1
    fits = last_line + len(dtype_text) + 2 <= np.get_printoptions()["linewidth"]
    return f"{prefix}{body},{' ' if fits else ' ' * len(prefix)}{dtype_text})"


def sharded(value: np.ndarray, sharding, weak_type: bool = False) -> Array:
    """An Array holding the global host `value`, laid out over devices as `sharding` says
    (on host backends every shard is a view of `value`)."""
    out = Array(value, weak_type)
    out._sharding = sharding
    Array.any_sharded = True
    return out
