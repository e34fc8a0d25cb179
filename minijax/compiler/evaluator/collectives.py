"""The evaluator's collectives: all-reduce, all-gather, reduce-scatter, collective-permute,
all-to-all, replica-id and partition-id, in XLA's semantics.

Outside a multi-device run (no backends.spmd.CollectiveContext on this thread) a program has
one participant: groups of one, ids 0. Inside one, each instruction meets the other members
of its group through the context's Transport. Participant ids are the indices of the
devices the program runs on, used for replica groups in every mode (cross-replica,
cross-partition, `use_global_device_ids=true`): minijax runs N partitions of one replica,
or N replicas of one partition, never both. Reductions combine contributions in group
order: the same bits on every device and every run.
"""

from __future__ import annotations

import re

import numpy as np

from minijax.backends.spmd import current_context


class CollectiveError(ValueError):
    """A collective's attributes do not fit the participants of the run."""


def parse_groups(raw) -> tuple:
    """`replica_groups` as a tuple of tuples of ids: XLA's `{{0,1},{2,3}}`, `{}` (every
    participant: ()), or the iota form `[2,2]<=[4]` / `[2,2]<=[2,2]T(1,0)`."""
    if raw is None:
        return ()
    if isinstance(raw, tuple):
        return raw
    text = str(raw).replace(" ", "")
    m = re.fullmatch(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if m:
        shape = [int(v) for v in m.group(1).split(",")]
        dims = [int(v) for v in m.group(2).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(3):
            ids = ids.transpose([int(v) for v in m.group(3).split(",")])
        ids = ids.reshape(shape[0], -1)
        return tuple(tuple(int(v) for v in row) for row in ids)
    return tuple(tuple(int(v) for v in g.split(",") if v)
                 for g in re.findall(r"\{([\d,]*)\}", text) if g)


def groups_text(groups) -> str:
    """XLA's text for replica groups: ((0, 1), (2, 3)) -> `{{0,1},{2,3}}`."""
    return "{" + ",".join("{" + ",".join(str(i) for i in g) + "}" for g in groups) + "}"


def parse_pairs(raw) -> tuple:
    """`source_target_pairs={{0,1},{1,0}}` -> ((0, 1), (1, 0))."""
    if isinstance(raw, tuple):
        return raw
    pairs = parse_groups(raw)
    if any(len(p) != 2 for p in pairs):
        raise CollectiveError(f"source_target_pairs must be pairs, got {raw}")
    return pairs


def _my_group(instr, ctx) -> tuple:
    groups = parse_groups(instr.attrs.get("replica_groups"))
    if not groups:
        return tuple(range(ctx.size))
    for g in groups:
        if ctx.rank in g:
            if any(not 0 <= r < ctx.size for r in g):
                raise CollectiveError(f"{instr.name} ({instr.opcode}): replica group {list(g)} "
                                      f"names a device outside the {ctx.size} running it")
            return g
    raise CollectiveError(f"{instr.name} ({instr.opcode}): participant {ctx.rank} is in no "
                          f"replica group of {groups_text(groups)}")


def _one_dimension(instr) -> int:
    dims = instr.attrs.get("dimensions")
    if not dims or len(dims) != 1:
        raise CollectiveError(f"{instr.name} ({instr.opcode}) needs dimensions={{d}}")
    return int(dims[0])


# Reductions whose computation is one of these ops of its two parameters run as NumPy ufuncs
# accumulating in place (the same IEEE operations, in the same order).
_UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
           "minimum": np.minimum, "and": np.logical_and, "or": np.logical_or}


def binary_reduction_opcode(comp) -> str | None:
    """The opcode of a reduction computation that is one op of _UFUNCS applied to its two
    parameters (add, multiply, maximum, minimum; and/or of preds), else None."""
    root = comp.root
    params = {id(p) for p in comp.parameters}
    if (root.opcode in _UFUNCS and len(root.operands) == 2 and len(params) == 2
            and {id(o) for o in root.operands} == params
            and (root.opcode not in ("and", "or") or root.shape.element_type == "pred")):
        return root.opcode
    return None


def _ufunc_of(comp):
    opcode = binary_reduction_opcode(comp)
    return None if opcode is None else _UFUNCS[opcode]


def _reducer(instr, evaluator_ctx):
    comp = instr.called["to_apply"]
    ufunc = _ufunc_of(comp)
    if ufunc is not None:
        def combine_fast(values):
            acc = np.array(values[0])
            for v in values[1:]:
                ufunc(acc, v, out=acc)
            return acc
        return combine_fast

    def combine(values):
        acc = np.asarray(values[0])
        for v in values[1:]:
            acc = evaluator_ctx.call_elementwise(comp, [acc, np.asarray(v)])[0]
        return np.array(acc, dtype=np.asarray(values[0]).dtype)
    return combine


def _run(instr, ops, ctx, combine_one):
    """Exchange the operands (one array or several) inside the group; `combine_one(values,
    position, group)` gives this participant's result for one operand."""
    group = _my_group(instr, ctx)
    pos = group.index(ctx.rank)
    many = len(ops) != 1
    value = tuple(np.asarray(o) for o in ops) if many else np.asarray(ops[0])

    def combine(values):
        if many:
            return tuple(combine_one([v[k] for v in values], pos, group)
                         for k in range(len(ops)))
        return combine_one(values, pos, group)
    key = ("c", ctx.next_key())
    return ctx.transport.exchange(key, ctx.rank, group, value, combine,
                                  f"{instr.name} ({instr.opcode})")


def _single(instr, ops):
    """One participant: every group must be just it; the operands come back as they are."""
    groups = parse_groups(instr.attrs.get("replica_groups"))
    if any(len(g) > 1 for g in groups):
        raise CollectiveError(
            f"{instr.name} ({instr.opcode}) has replica groups {groups_text(groups)} but runs "
            "on one device: run the module on that many devices (pmap, shard_map, "
            "or backends.spmd.run_spmd)")
    return ops[0] if len(ops) == 1 else tuple(ops)


def all_reduce(instr, ops, ectx):
    ctx = current_context()
    if ctx is None:
        return _single(instr, ops)
    reduce = _reducer(instr, ectx)
    return _run(instr, ops, ctx, lambda values, pos, group: reduce(values))


def all_gather(instr, ops, ectx):
    dim = _one_dimension(instr)
    ctx = current_context()
    if ctx is None:
        return _single(instr, ops)
    return _run(instr, ops, ctx, lambda values, pos, group: np.concatenate(values, axis=dim))


def reduce_scatter(instr, ops, ectx):
    dim = _one_dimension(instr)
    ctx = current_context()
    if ctx is None:
        return _single(instr, ops)
    reduce = _reducer(instr, ectx)

    def one(values, pos, group):
        size = values[0].shape[dim] // len(group)
        index = [slice(None)] * values[0].ndim
        index[dim] = slice(pos * size, (pos + 1) * size)
        return reduce([v[tuple(index)] for v in values])
    return _run(instr, ops, ctx, one)


def all_to_all(instr, ops, ectx):
    ctx = current_context()
    if ctx is None:
        return _single(instr, ops)
    if len(ops) == 1 and instr.attrs.get("dimensions"):
        dim = _one_dimension(instr)

        def one(values, pos, group):
            n = len(group)
            size = values[0].shape[dim] // n
            index = [slice(None)] * values[0].ndim
            index[dim] = slice(pos * size, (pos + 1) * size)
            return np.concatenate([v[tuple(index)] for v in values], axis=dim)
        return _run(instr, ops, ctx, one)
    # Tuple form: operand i goes to the group's i-th member; result i came from member i.
    group = _my_group(instr, ctx)
    if len(ops) != len(group):
        raise CollectiveError(f"{instr.name} (all-to-all): {len(ops)} operands for a group "
                              f"of {len(group)}")
    pos = group.index(ctx.rank)
    value = tuple(np.asarray(o) for o in ops)
    return ctx.transport.exchange(("c", ctx.next_key()), ctx.rank, group, value,
                                  lambda values: tuple(np.array(v[pos]) for v in values),
                                  f"{instr.name} (all-to-all)")


def collective_permute(instr, ops, ectx):
    pairs = parse_pairs(instr.attrs.get("source_target_pairs", "{}"))
    ctx = current_context()
    if ctx is None:
        src = dict((t, s) for s, t in pairs).get(0)
        return np.array(ops[0]) if src == 0 else np.zeros_like(np.asarray(ops[0]))
    source = {t: s for s, t in pairs}.get(ctx.rank)
    group = tuple(range(ctx.size))

    def combine(values):
        if source is None:
            return np.zeros_like(values[ctx.rank])
        return np.array(values[source])
    return ctx.transport.exchange(("c", ctx.next_key()), ctx.rank, group, np.asarray(ops[0]),
                                  combine, f"{instr.name} (collective-permute)")


def participant_id(instr, ops, ectx):
    ctx = current_context()
    return np.asarray(0 if ctx is None else ctx.rank, dtype=instr.shape.dtype)


OPCODES = {
    "all-reduce": all_reduce, "all-gather": all_gather, "reduce-scatter": reduce_scatter,
    "all-to-all": all_to_all, "collective-permute": collective_permute,
    "replica-id": participant_id, "partition-id": participant_id,
}
