"""The pytree registry: which types are nodes, how to take each apart and put it back, and
the key entries (``SequenceKey``, ``DictKey``, ...) that name a node's children in key paths.

Part of minijax.tree_util, which re-exports the public names here. A leaf module: it imports
only the standard library.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any

_MISSING = object()

# Node kinds: they select the repr and how flatten_up_to checks a value against a node.
_SEQ, _DICT, _NONE, _NAMEDTUPLE, _CUSTOM = range(5)


# --------------------------------------------------------------------------------------------
# Keys (path entries)


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Path entry for the ``idx``-th child of a tuple or list."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """Path entry for the child stored under ``key`` in a dict-like node."""
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Path entry for an attribute (namedtuple field, dataclass field)."""
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """Path entry for the ``key``-th child of a custom node registered without keys."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(keys: Iterable[Any], *, simple: bool = False, separator: str | None = None) -> str:
    """Render a key path, e.g. ``[0]['a'].b``; ``simple=True`` gives bare names (``0a b``)."""
    if simple:
        parts = [str(getattr(k, "idx", getattr(k, "key", getattr(k, "name", k)))) for k in keys]
    else:
        parts = [str(k) for k in keys]
    return ("" if separator is None else separator).join(parts)


# --------------------------------------------------------------------------------------------
# Registry


class _Handler:
    """How to take one node type apart, put it back together, and name its children."""

    __slots__ = ("type", "kind", "flatten", "unflatten", "keys", "flatten_with_keys")

    def __init__(self, typ, kind, flatten, unflatten, keys=None, flatten_with_keys=None):
        self.type = typ
        self.kind = kind
        self.flatten = flatten  # x -> (children iterable, aux_data)
        self.unflatten = unflatten  # (aux_data, children list) -> x
        self.keys = keys or (lambda aux, n: [FlattenedIndexKey(i) for i in range(n)])
        if flatten_with_keys is None:

            def flatten_with_keys(x):
                children, aux = flatten(x)
                children = list(children)
                return list(zip(self.keys(aux, len(children)), children)), aux

        self.flatten_with_keys = flatten_with_keys  # x -> ([(key, child)], aux_data)


# type -> handler, or None for a leaf type (a cache; namedtuples and leaves are added lazily).
_handlers: dict[type, _Handler | None] = {}
# Types registered explicitly (built-ins included): registering one again is an error.
_registered: set[type] = set()


def _resolve(typ: type) -> _Handler | None:
    """Handler for ``typ`` (None for a leaf type), caching the answer."""
    h = _handlers.get(typ, _MISSING)
    if h is _MISSING:
        h = None
        if issubclass(typ, tuple) and isinstance(getattr(typ, "_fields", None), tuple):
            fields = [GetAttrKey(f) for f in typ._fields]
            h = _Handler(typ, _NAMEDTUPLE, lambda x: (x, None),
                         lambda _, cs, typ=typ: typ(*cs), lambda aux, n: fields)
        _handlers[typ] = h
    return h


def _add(handler: _Handler) -> None:
    if handler.type in _registered:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {handler.type}.")
    _registered.add(handler.type)
    _handlers[handler.type] = handler


def _sorted_keys(d: dict) -> tuple:
    """Dict keys in sorted order; keys that do not compare (1 and 'a') raise as in JAX."""
    try:
        return tuple(sorted(d))
    except TypeError as e:
        raise ValueError(f"Comparator raised exception while sorting pytree dictionary keys "
                         f"{list(d)!r}: {e}. Use keys of one comparable type.") from e


def _dict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], keys


def _ddict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, keys)


def _seq_keys(aux, n):
    return [SequenceKey(i) for i in range(n)]


def _dict_keys(aux, n):
    return [DictKey(k) for k in aux]


_add(_Handler(tuple, _SEQ, lambda x: (x, None), lambda _, cs: tuple(cs), _seq_keys))
_add(_Handler(list, _SEQ, lambda x: (x, None), lambda _, cs: list(cs), _seq_keys))
_add(_Handler(dict, _DICT, _dict_flatten, lambda keys, cs: dict(zip(keys, cs)), _dict_keys))
_add(_Handler(type(None), _NONE, lambda x: ((), None), lambda _, cs: None))
_add(_Handler(collections.OrderedDict, _DICT, lambda d: (list(d.values()), tuple(d)),
              lambda keys, cs: collections.OrderedDict(zip(keys, cs)), _dict_keys))
_add(_Handler(collections.defaultdict, _DICT, _ddict_flatten,
              lambda aux, cs: collections.defaultdict(aux[0], zip(aux[1], cs)),
              lambda aux, n: _dict_keys(aux[1], n)))


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Make ``nodetype`` a pytree node.

    ``flatten_func(x) -> (children, aux_data)`` where ``aux_data`` is hashable static data;
    ``unflatten_func(aux_data, children) -> x``. The optional ``flatten_with_keys_func(x) ->
    (((key, child), ...), aux_data)`` names the children in key paths.
    """
    _add(_Handler(nodetype, _CUSTOM, flatten_func, unflatten_func, None, flatten_with_keys_func))


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Register ``nodetype`` given ``flatten_with_keys(x) -> (((key, child), ...), aux)``."""
    if flatten_func is None:

        def flatten_func(x):
            keyed, aux = flatten_with_keys(x)
            return [c for _, c in keyed], aux

    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: use ``cls.tree_flatten(self)`` and ``cls.tree_unflatten(aux, children)``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten_with_keys(self) -> (((key, child), ...), aux)`` and
    ``cls.tree_unflatten(aux, children)``; ``cls.tree_flatten`` is used when defined."""
    flatten = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              None if flatten is None else (lambda x: x.tree_flatten()))
    return cls


def register_static(cls: type) -> type:
    """Register ``cls`` as a node with no children whose instances are static (hashable) data."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


def register_dataclass(nodetype: type | None = None, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None,
                       drop_fields: Iterable[str] = ()) -> Any:
    """Register a dataclass: ``data_fields`` are children, ``meta_fields`` static aux data.

    Usable as a decorator. When both field lists are omitted they are inferred from
    ``dataclasses.fields``: fields with ``metadata={"static": True}`` are meta fields, other
    ``init`` fields are data fields. Unflattening calls ``nodetype(**fields)``.
    """
    if nodetype is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields, drop_fields=drop_fields)
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when "
                            f"{nodetype.__name__} is not a dataclass.")
        data_fields, meta_fields = [], []
        for f in dataclasses.fields(nodetype):
            if f.init and f.name not in drop_fields:
                (meta_fields if f.metadata.get("static", False) else data_fields).append(f.name)
    elif data_fields is None or meta_fields is None:
        raise TypeError("register_dataclass: give both data_fields and meta_fields, or neither.")
    data, meta = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        if set(data) | set(meta) != init:
            raise ValueError(f"register_dataclass: data_fields {list(data)} and meta_fields "
                             f"{list(meta)} must together name exactly the init fields of "
                             f"{nodetype.__name__}: {sorted(init)}.")

    def flatten(x):
        return [getattr(x, n) for n in data], tuple([getattr(x, n) for n in meta])

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    attr_keys = [GetAttrKey(n) for n in data]
    _add(_Handler(nodetype, _CUSTOM, flatten, unflatten, lambda aux, n: attr_keys))
    return nodetype
