"""Array shardings over a device mesh in XLA's HLO text (`sharding={devices=[2,1]<=[2]}`).

A *dims spec* says, for each array dimension, the mesh axes (names, in order, the first
major) it is split over: `(("x",), ())` splits dimension 0 over axis x. The mesh is given by
its axis names and sizes; device (partition) ids are row-major over the mesh. In XLA's
iota tile-assignment syntax a spec is
`{devices=[t0,...,tr-1(,rep)]<=[mesh sizes]T(axis order) (last_tile_dim_replicate)}`, with
the axes of dimension 0, then dimension 1, ..., then the unused axes (replication) in the
transpose; `{replicated}` when nothing is split.
"""

from __future__ import annotations

import math
import re

_IOTA = re.compile(r"devices=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?"
                   r"(\s+last_tile_dim_replicate)?")


def spec_to_text(names, sizes, dims_spec) -> str:
    """XLA's sharding text for `dims_spec` over a mesh (`names`, `sizes`)."""
    names, sizes = list(names), list(sizes)
    used = [names.index(a) for axes in dims_spec for a in axes]
    if not used:
        return "{replicated}"
    unused = [k for k in range(len(names)) if k not in used]
    tiles = [math.prod(sizes[names.index(a)] for a in axes) for axes in dims_spec]
    rep = math.prod(sizes[k] for k in unused)
    perm = used + unused
    text = "{devices=[" + ",".join(str(t) for t in tiles + ([rep] if rep > 1 else []))
    text += "]<=[" + ",".join(str(s) for s in sizes) + "]"
    if perm != list(range(len(names))):
        text += "T(" + ",".join(str(p) for p in perm) + ")"
    if rep > 1:
        text += " last_tile_dim_replicate"
    return text + "}"


def text_to_spec(text: str, names, sizes, rank: int):
    """The dims spec of XLA sharding text over a mesh, or None when the text is not a
    mesh-axis tiling of this mesh (an explicit device list, a maximal sharding, ...)."""
    text = str(text).strip()
    if text in ("{replicated}", "replicated"):
        return ((),) * rank
    m = _IOTA.search(text)
    if not m:
        return None
    tiles = [int(v) for v in m.group(1).split(",")]
    reshape = [int(v) for v in m.group(2).split(",")]
    sizes = list(sizes)
    if m.group(3):
        if reshape != sizes:
            return None
        perm = [int(v) for v in m.group(3).split(",")]
    else:
        if math.prod(reshape) != math.prod(sizes):
            return None
        perm = list(range(len(sizes)))
    has_rep = bool(m.group(4))
    if len(tiles) != rank + (1 if has_rep else 0):
        return None
    out, k = [], 0
    for t in tiles[:rank]:
        axes, prod = [], 1
        while prod < t and k < len(perm):
            axes.append(names[perm[k]])
            prod *= sizes[perm[k]]
            k += 1
        if prod != t:
            return None
        out.append(tuple(axes))
    return tuple(out)


__all__ = ["spec_to_text", "text_to_spec"]
