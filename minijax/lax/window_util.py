"""Window parameters shared by the window reductions (windowed.py) and select-and-scatter /
select-and-gather-add (windowed_select.py): canonical form, output shape, the NumPy fold,
batching and the HLO window attribute.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax.lax.conv_util import (
    check_ints,
    conv_out_spatial,
    dilate,
    dilate_dim,
    pad_crop,
    padtype_to_pads,
    window_views,
)

_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
           "window_dilation")


def window_params(name, shape, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
    """Canonical window parameters (tuples of ints; string padding resolved)."""
    n = len(shape)
    per = f"operand dimension ({n}, operand shape {tuple(shape)})"

    def ints(what, values, minimum):
        return check_ints(name, what, values, n, minimum, per)
    window_dimensions = ints("window_dimensions", window_dimensions, 0)
    window_strides = ints("window_strides", window_strides, 1)
    base_dilation = ints("base_dilation", base_dilation or (1,) * n, 1)
    window_dilation = ints("window_dilation", window_dilation or (1,) * n, 1)
    if isinstance(padding, str):
        padding = padtype_to_pads(
            [dilate_dim(d, b) for d, b in zip(shape, base_dilation, strict=True)],
            [dilate_dim(w, r) for w, r in zip(window_dimensions, window_dilation, strict=True)],
            window_strides, padding)
    padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    if len(padding) != n:
        raise TypeError(f"{name}: padding must have one (low, high) pair per operand "
                        f"dimension ({n}), got {padding}")
    return dict(window_dimensions=window_dimensions, window_strides=window_strides,
                padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


def window_out_shape(shape, p):
    """The output shape of a window reduction with parameters p."""
    return conv_out_spatial(shape, p["window_dimensions"], p["window_strides"], p["padding"],
                            p["base_dilation"], p["window_dilation"])


def window_fold(xs, identities, combine, p):
    """Fold `combine(accs, views)` over the window offsets of the (dilated, padded) xs."""
    shape = xs[0].shape
    out = window_out_shape(shape, p)
    accs = [np.full(out, i, x.dtype) for x, i in zip(xs, identities, strict=True)]
    if 0 in out:
        return accs
    padded = [pad_crop(dilate(x, p["base_dilation"], 0, i), p["padding"], 0, i)
              for x, i in zip(xs, identities, strict=True)]
    per_x = [window_views(x, p["window_dimensions"], p["window_strides"],
                          p["window_dilation"], out, 0) for x in padded]
    for views in zip(*per_x, strict=True):
        accs = combine(accs, list(views))
    return accs


def check_window(name, x, p):
    if len(p["window_dimensions"]) != x.ndim:
        raise TypeError(f"{name}: window of rank {len(p['window_dimensions'])} does not match "
                        f"operand {x.str_short()}")


def window_batch_params(p, d):
    """Window parameters with a trivial window dimension inserted at position d."""
    def ins(t, v):
        t = list(t)
        t.insert(d, v)
        return tuple(t)
    return dict(window_dimensions=ins(p["window_dimensions"], 1),
                window_strides=ins(p["window_strides"], 1), padding=ins(p["padding"], (0, 0)),
                base_dilation=ins(p["base_dilation"], 1),
                window_dilation=ins(p["window_dilation"], 1))


def hlo_window(p):
    """The HLO `window={...}` attribute of window parameters."""
    return {"size": p["window_dimensions"], "stride": p["window_strides"], "pad": p["padding"],
            "lhs_dilate": p["base_dilation"], "rhs_dilate": p["window_dilation"]}


# --------------------------------------------------------------------------- monoid windows


