"""Optimizers as (init, update, get_params) triples over pytrees of parameters, as JAX's
`jax.example_libraries.optimizers`:

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)
    opt_state = opt_update(step, grads, opt_state)
    params = get_params(opt_state)

Step sizes are constants or schedules `step -> step size`. `adamw` (Adam with decoupled
weight decay) is an addition to JAX's set.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from typing import NamedTuple

from minijax import numpy as jnp
from minijax import tree_util

__all__ = ["Optimizer", "OptimizerState", "adagrad", "adam", "adamax", "adamw", "clip_grads",
           "constant", "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule",
           "momentum", "nesterov", "optimizer", "pack_optimizer_state", "piecewise_constant",
           "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
           "unpack_optimizer_state"]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], *aux))


class Optimizer(NamedTuple):
    """The (init_fn, update_fn, params_fn) triple of an optimizer."""
    init_fn: object
    update_fn: object
    params_fn: object


def _unzip2(pairs):
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)  # tuples: the tree defs are hashable pytree aux data


def optimizer(opt_maker):
    """Lift an optimizer on single arrays to one on pytrees of arrays (a decorator)."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_util.tree_flatten(x0_tree)
            states_flat, subtrees = _unzip2(tree_util.tree_flatten(init(x0))
                                            for x0 in x0_flat)
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tree_util.tree_flatten(grad_tree)
            if tree2 != tree:
                raise TypeError("optimizer update function was passed a gradient tree that did "
                                "not match the parameter tree structure with which it was "
                                f"initialized: parameter tree {tree} and grad tree {tree2}.")
            states = [tree_util.tree_unflatten(s, f) for s, f in zip(subtrees, states_flat,
                                                                       strict=True)]
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states, strict=True)]
            new_flat, subtrees2 = _unzip2(tree_util.tree_flatten(s) for s in new_states)
            for s1, s2 in zip(subtrees, subtrees2, strict=True):
                if s1 != s2:
                    raise TypeError("optimizer update function produced an output structure "
                                    "that did not match its input structure: input "
                                    f"{s1} and output {s2}.")
            return OptimizerState(new_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = [tree_util.tree_unflatten(s, f) for s, f in zip(subtrees, states_flat,
                                                                       strict=True)]
            return tree_util.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: x - step_size(i) * g."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass: float):
    """Heavy-ball momentum: v = mass v + g; x -= step_size v."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov momentum: v = mass v + g; x -= step_size (mass v + g)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


def _with_two_zero_slots(x0):
    """Initial state (x0, zeros, zeros) of optimizers that keep two per-parameter slots."""
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum on the normalized gradient."""
    step_size = make_schedule(step_size)

    init = _with_two_zero_slots

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return init, update, (lambda s: s[0])


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: divide by a running root-mean-square of the gradients."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum."""
    step_size = make_schedule(step_size)

    init = _with_two_zero_slots

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom
    return init, update, (lambda s: s[0])


def _adam_moments(i, g, m, v, b1, b2):
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    return m, v, mhat, vhat


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba) with bias-corrected moment estimates."""
    step_size = make_schedule(step_size)

    init = _with_two_zero_slots

    def update(i, g, state):
        x, m, v = state
        m, v, mhat, vhat = _adam_moments(i, g, m, v, b1, b2)
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
    return init, update, (lambda s: s[0])


@optimizer
def adamw(step_size, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4):
    """Adam with decoupled weight decay (Loshchilov and Hutter):
    x -= step_size (mhat / (sqrt(vhat) + eps) + weight_decay x)."""
    step_size = make_schedule(step_size)

    init = _with_two_zero_slots

    def update(i, g, state):
        x, m, v = state
        m, v, mhat, vhat = _adam_moments(i, g, m, v, b1, b2)
        return x - step_size(i) * (mhat / (jnp.sqrt(vhat) + eps) + weight_decay * x), m, v
    return init, update, (lambda s: s[0])


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm."""
    step_size = make_schedule(step_size)

    init = _with_two_zero_slots

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1)) * m / (u + eps)
        return x, m, u
    return init, update, (lambda s: s[0])


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (memory-efficient adaptive optimization): one accumulator per axis."""
    step_size = make_schedule(step_size)

    def broadcast_into(ndim, x, axis):
        shape = [1] * ndim
        shape[axis] = x.shape[0]
        return jnp.reshape(x, shape)

    def init(x0):
        x_shape = jnp.shape(x0)
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(sz, dtype=x0.dtype) for sz in x0.shape]
        return x0, jnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        g = jnp.reshape(g, x.shape)
        vs = [broadcast_into(g.ndim, v, k) for k, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [jnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != j))
              for j in range(x.ndim)]
        return x, m, vs, x_shape
    return init, update, (lambda s: jnp.reshape(s[0], s[3]))


# --------------------------------------------------------------------------- schedules


def constant(step_size):
    """The schedule i -> step_size."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    """i -> step_size * decay_rate ** (i / decay_steps)."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """i -> step_size / (1 + decay_rate * i / decay_steps) (floored ratio if staircase)."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """Decay from step_size to final_step_size over decay_steps as (1 - t)^power."""
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """values[k] for steps in (boundaries[k-1], boundaries[k]]."""
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule):
    """A schedule from a callable (returned as is) or a scalar (a constant schedule)."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# --------------------------------------------------------------------------- utilities


def l2_norm(tree):
    """The l2 norm of all leaves of a pytree together."""
    leaves = tree_util.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Scale a gradient pytree down to l2 norm max_norm if it is larger."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                              grad_tree)


class JoinPoint:
    """Marks the boundary between a parameter pytree and an optimizer's per-leaf state."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An OptimizerState as a pytree of JoinPoints (for saving)."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [tree_util.tree_unflatten(d, s) for d, s in zip(subtree_defs, states_flat,
                                                               strict=True)]
    return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """The inverse of unpack_optimizer_state."""
    sentinels, tree_def = tree_util.tree_flatten(
        marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state expects a pytree of JoinPoints")
    states_flat, subtree_defs = _unzip2(tree_util.tree_flatten(s.subtree) for s in sentinels)
    return OptimizerState(states_flat, tree_def, subtree_defs)
