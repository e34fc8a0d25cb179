"""minijax.lax: the primitive layer (JAX's `jax.lax`)."""

from minijax.lax import (
    elementwise_jvp,  # noqa: F401 - registers the rem/pow/max/min/abs JVPs
    gather_scatter_ad,  # noqa: F401 - registers the scatters' JVP and transpose rules
    reductions_jvp,  # noqa: F401 - registers reduce_max/min/prod JVPs
)
from minijax.lax.accuracy import AccuracyMode, Tolerance
from minijax.lax.ann import approx_max_k, approx_min_k
from minijax.lax.composite import composite
from minijax.lax.conv_util import ConvDimensionNumbers, conv_general_permutations
from minijax.lax.cumulative import cumlogsumexp, cummax, cummin, cumprod, cumsum
from minijax.lax.dot_conv import (
    Precision,
    conv,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_with_general_padding,
    dot,
    dot_general,
    padtype_to_pads,
)
from minijax.lax.elementwise import (
    RoundingMethod,
    abs,
    add,
    ceil,
    cos,
    div,
    exp,
    floor,
    integer_pow,
    max,
    min,
    mul,
    neg,
    pow,
    reciprocal,
    rem,
    round,
    sign,
    sin,
    square,
    sub,
)
from minijax.lax.elementwise_complex import complex, conj, imag, real
from minijax.lax.elementwise_int import (
    bitcast_convert_type,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    clamp,
    clz,
    eq,
    ge,
    gt,
    le,
    lt,
    ne,
    population_count,
    select,
    select_n,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
)
from minijax.lax.elementwise_math import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cbrt,
    cosh,
    digamma,
    erf,
    erf_inv,
    erfc,
    exp2,
    expm1,
    is_finite,
    lgamma,
    log,
    log1p,
    logistic,
    nextafter,
    reduce_precision,
    rsqrt,
    sinh,
    sqrt,
    tan,
    tanh,
)
from minijax.lax.gather_scatter import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    scatter,
    scatter_add,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_sub,
)
from minijax.lax.reduce_generic import reduce
from minijax.lax.reductions import (
    argmax,
    argmin,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    reduce_xor,
)
from minijax.lax.slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    index_in_dim,
    pad,
    slice,
    slice_in_dim,
)
from minijax.lax.sorting import sort, sort_key_val, top_k
from minijax.lax.structural import (
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    convert_element_type,
    expand_dims,
    full,
    full_like,
    iota,
    reshape,
    rev,
    squeeze,
    transpose,
    zeros_like_array,
)
from minijax.lax.windowed import (
    reduce_window,
    reduce_window_max,
    reduce_window_min,
    reduce_window_sum,
)

__all__ = [
    "add", "broadcast", "broadcast_in_dim", "convert_element_type", "cos", "exp", "mul",
    "neg", "reduce_sum", "reshape", "sin", "sub", "transpose",
]

# elementwise primitives (lax/elementwise*.py)
__all__ += [
    "RoundingMethod", "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh",
    "bitcast_convert_type", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "cbrt",
    "ceil", "clamp", "clz", "complex", "conj", "cosh", "digamma", "div", "eq", "erf",
    "erf_inv", "erfc", "exp2", "expm1", "floor", "ge", "gt", "imag", "integer_pow",
    "is_finite", "le", "lgamma", "log", "log1p", "logistic", "lt", "max", "min", "ne",
    "nextafter", "population_count", "pow", "real", "reciprocal", "reduce_precision", "rem",
    "round", "rsqrt", "select", "select_n", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "sign", "sinh", "sqrt", "square", "tan", "tanh",
]

# structural, slicing, gather/scatter (lax/structural.py, slicing.py, gather_scatter.py)
__all__ += [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
    "broadcasted_iota", "concatenate", "dynamic_index_in_dim", "dynamic_slice",
    "dynamic_slice_in_dim", "dynamic_update_index_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "expand_dims", "full", "full_like", "gather",
    "index_in_dim", "iota", "pad", "rev", "scatter", "scatter_add", "scatter_max",
    "scatter_min", "scatter_mul", "scatter_sub", "slice", "slice_in_dim", "squeeze",
    "zeros_like_array",
]

# reductions, contractions, windows, sorting (lax/reductions.py, cumulative.py,
# reduce_generic.py, dot_conv.py, conv_util.py, windowed*.py, sorting.py)
__all__ += [
    "ConvDimensionNumbers", "Precision", "argmax", "argmin", "conv", "conv_dimension_numbers",
    "conv_general_dilated", "conv_general_permutations", "conv_with_general_padding",
    "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum", "dot", "dot_general",
    "padtype_to_pads", "reduce", "reduce_and", "reduce_max", "reduce_min", "reduce_or",
    "reduce_prod", "reduce_window", "reduce_window_max", "reduce_window_min",
    "reduce_window_sum", "reduce_xor", "sort", "sort_key_val", "top_k",
    "AccuracyMode", "Tolerance", "approx_max_k", "approx_min_k", "composite",
]

# control flow and custom derivatives (lax/control_flow*.py, minijax/custom_derivatives.py)
from minijax.lax.control_flow import cond, switch  # noqa: E402
from minijax.lax.control_flow_assoc import associative_scan  # noqa: E402
from minijax.lax.control_flow_loops import fori_loop, while_loop  # noqa: E402
from minijax.lax.control_flow_scan import map, scan  # noqa: E402
from minijax.lax.stop_gradient import stop_gradient  # noqa: E402

__all__ += [
    "associative_scan", "cond", "fori_loop", "map", "scan", "stop_gradient", "switch",
    "while_loop",
]

# collectives over a named vmap, pmap or shard_map axis (lax/collectives*.py)
from minijax.lax import collectives_lowering as _collectives_lowering  # noqa: E402, F401
from minijax.lax import float8_sum as _float8_sum  # noqa: E402, F401  (registers float8 sums)
from minijax.lax.collectives import (  # noqa: E402
    all_gather,
    axis_index,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
)
from minijax.lax.collectives_all_to_all import all_to_all, pswapaxes  # noqa: E402
from minijax.lax.sharding_constraint import with_sharding_constraint  # noqa: E402

__all__ += [
    "all_gather", "all_to_all", "axis_index", "pmax", "pmean", "pmin", "ppermute", "pswapaxes",
    "psum", "psum_scatter", "with_sharding_constraint",
]

# FFT (lax/fft.py)
from minijax.lax.fft import FftType, fft  # noqa: E402

__all__ += ["FftType", "fft"]


from minijax.lax.utils import broadcast_shapes  # noqa: E402

__all__ += ["broadcast_shapes"]


# The primitive objects (add_p, dot_general_p, ...), exported as JAX's lax does, for
# libraries that register rules for them or look for them in jaxprs.
def _primitives() -> dict:
    import sys as _sys
    found = {}
    for _name, _module in list(_sys.modules.items()):
        if _name.startswith("minijax.lax.") and _module is not None:
            for _attr, _value in vars(_module).items():
                if _attr.endswith("_p") and isinstance(_value, _Primitive):
                    found.setdefault(_attr, _value)
    return found


from minijax.core import Primitive as _Primitive  # noqa: E402

globals().update({_k: _v for _k, _v in _primitives().items() if _k not in globals()})

# optimization barrier, axis size (lax/optimization_barrier.py, collectives.py)
from minijax.lax.collectives import axis_size  # noqa: E402
from minijax.lax.optimization_barrier import optimization_barrier  # noqa: E402

__all__ += ["axis_size", "optimization_barrier"]

# shape conveniences and mulhi (lax/shape_helpers.py)
from minijax.lax.shape_helpers import (  # noqa: E402
    broadcast_to_rank,
    collapse,
    empty,
    mulhi,
    split,
)

__all__ += ["broadcast_to_rank", "collapse", "empty", "mulhi", "split"]

# conv_transpose, conv_general_dilated_patches, batch_matmul (lax/conv_transpose.py)
from minijax.lax.conv_transpose import (  # noqa: E402
    batch_matmul,
    conv_general_dilated_patches,
    conv_transpose,
)

__all__ += ["batch_matmul", "conv_general_dilated_patches", "conv_transpose"]

# implicitly differentiated solvers (lax/control_flow_solve.py)
from minijax.lax.control_flow_solve import custom_linear_solve, custom_root  # noqa: E402

__all__ += ["custom_linear_solve", "custom_root"]

# the primitives defined by the modules above (optimization_barrier_p, linear_solve_p)
globals().update({_k: _v for _k, _v in _primitives().items() if _k not in globals()})

# special functions, implemented in minijax.scipy.special (lax/special.py)
from minijax.lax.special import (  # noqa: E402
    bessel_i0e,
    bessel_i1e,
    betainc,
    igamma,
    igammac,
    polygamma,
    zeta,
)

__all__ += ["bessel_i0e", "bessel_i1e", "betainc", "igamma", "igammac", "polygamma", "zeta"]

# jax.lax.linalg's general eigensolver, Householder reductions and tridiagonal solver
# (lax/linalg_more.py and lax/qdwh.py, which build on lax/linalg.py) in the
# minijax.lax.linalg namespace.
from minijax.lax import linalg as _linalg  # noqa: E402
from minijax.lax import linalg_more as _linalg_more  # noqa: E402
from minijax.lax import qdwh as _qdwh  # noqa: E402

for _mod in (_linalg_more, _qdwh):
    for _name in _mod.__all__:
        setattr(_linalg, _name, getattr(_mod, _name))
    _linalg.__all__ = sorted({*_linalg.__all__, *_mod.__all__})
del _linalg, _linalg_more, _qdwh, _mod, _name
