"""Gradients at ties and kinks follow JAX's conventions (JAX 0.10.2's values, hard-coded).

Each case is the source of a function written against (jax, jnp, lax, np), its arguments and
JAX's gradient with respect to every argument. The same source runs on minijax under grad and
jit(grad), and on real JAX when it is importable (so the hard-coded values stay honest).
Conventions pinned here: ties of max/min (and of reductions, cummax/cummin, max-pooling) split
the gradient evenly; logaddexp at x == y gives 1/2 each; fmax/fmin give a tie to the second
argument; sort with descending=True is the reversed ascending sort (ties included); abs'(0) = 1,
relu'(0) = 0; clip at a bound splits with the bound; d/dx x ** 0. at 0 is NaN but x ** 0 gives
0; norms at 0 are NaN (2-norm) or split with the initial 0 (inf-norm); out-of-bound gathers
clamp forward and drop in the transpose, static out-of-bound indices clamp both ways.
"""

import math

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax import lax as mlax

nan, inf = math.nan, math.inf

# (name, function source, arguments source, JAX's gradients w.r.t. each argument)
CASES = [
    ('logaddexp_tie', 'lambda x, y: jnp.logaddexp(x, y)',
     '1., 1.', [0.5, 0.5]),
    ('logaddexp_tie_at_minus_inf', 'lambda x, y: jnp.logaddexp(x, y)',
     '-np.inf, -np.inf', [nan, nan]),
    ('logaddexp2_tie', 'lambda x, y: jnp.logaddexp2(x, y)',
     '1., 1.', [0.5, 0.5]),
    ('softplus_at_0', 'jax.nn.softplus',
     '0.', [0.5]),
    ('log_sigmoid_at_0', 'jax.nn.log_sigmoid',
     '0.', [0.5]),
    ('maximum_tie', 'lambda x, y: jnp.maximum(x, y)',
     '1., 1.', [0.5, 0.5]),
    ('minimum_tie', 'lambda x, y: jnp.minimum(x, y)',
     '1., 1.', [0.5, 0.5]),
    ('maximum_signed_zeros', 'lambda x, y: jnp.maximum(x, y)',
     '0., -0.', [0.5, 0.5]),
    ('lax_max_tie', 'lambda x, y: lax.max(x, y)',
     '1., 1.', [0.5, 0.5]),
    ('fmax_tie', 'lambda x, y: jnp.fmax(x, y)',
     '1., 1.', [0.0, 1.0]),
    ('fmin_tie', 'lambda x, y: jnp.fmin(x, y)',
     '1., 1.', [0.0, 1.0]),
    ('fmax_nan_first', 'lambda x, y: jnp.fmax(x, y)',
     'np.nan, 1.', [0.0, 1.0]),
    ('fmax_nan_second', 'lambda x, y: jnp.fmax(x, y)',
     '1., np.nan', [1.0, 0.0]),
    ('fmax_signed_zeros', 'lambda x, y: jnp.fmax(x, y)',
     '0., -0.', [0.0, 1.0]),
    ('abs_at_0', 'jnp.abs',
     '0.', [1.0]),
    ('abs_at_neg_0', 'jnp.abs',
     '-0.', [1.0]),
    ('relu_at_0', 'jax.nn.relu',
     '0.', [0.0]),
    ('relu6_at_6', 'jax.nn.relu6',
     '6.', [0.0]),
    ('leaky_relu_at_0', 'jax.nn.leaky_relu',
     '0.', [1.0]),
    ('elu_at_0', 'jax.nn.elu',
     '0.', [1.0]),
    ('hard_tanh_at_1', 'jax.nn.hard_tanh',
     '1.', [1.0]),
    ('hard_sigmoid_at_3', 'jax.nn.hard_sigmoid',
     '3.', [0.0]),
    ('clip_at_lower', 'lambda x: jnp.clip(x, 0., 1.)',
     '0.', [0.5]),
    ('clip_at_upper', 'lambda x: jnp.clip(x, 0., 1.)',
     '1.', [0.5]),
    ('clip_bounds_tie_lower', 'lambda x, a, b: jnp.clip(x, a, b)',
     '1., 1., 2.', [0.5, 0.5, 0.0]),
    ('clip_bounds_tie_upper', 'lambda x, a, b: jnp.clip(x, a, b)',
     '2., 1., 2.', [0.5, 0.0, 0.5]),
    ('clip_lo_eq_hi', 'lambda x: jnp.clip(x, 1., 1.)',
     '1.', [0.25]),
    ('lax_clamp_at_bound', 'lambda a, x, b: lax.clamp(a, x, b)',
     '1., 1., 2.', [0.0, 0.0, 0.0]),
    ('sort_ties', 'lambda x: jnp.sort(x)[0] + 2 * jnp.sort(x)[1]',
     'jnp.array([1., 1., 2.])', [[1.0, 2.0, 0.0]]),
    ('sort_descending_ties', 'lambda x: jnp.sum(jnp.sort(x, descending=True) * jnp.arange(1., 5.))',
     'jnp.array([2., 1., 2., 2.])', [[3.0, 4.0, 2.0, 1.0]]),
    ('sort_descending_2d',
     'lambda x: jnp.sum(jnp.sort(x, axis=0, descending=True) * jnp.arange(1., 7.).reshape(3, 2))',
     'jnp.array([[1., 2.], [1., 2.], [0., 2.]])', [[[3.0, 6.0], [1.0, 4.0], [5.0, 2.0]]]),
    ('top_k_ties', 'lambda x: jnp.sum(lax.top_k(x, 3)[0] * jnp.array([1., 2., 3.]))',
     'jnp.array([2., 1., 2., 2.])', [[1.0, 0.0, 2.0, 3.0]]),
    ('max_reduction_ties', 'jnp.max',
     'jnp.array([1., 2., 2.])', [[0.0, 0.5, 0.5]]),
    ('min_reduction_ties', 'jnp.min',
     'jnp.array([1., 1., 2.])', [[0.5, 0.5, 0.0]]),
    ('max_initial_tie', 'lambda x: jnp.max(x, initial=0.)',
     'jnp.zeros(3)', [[0.1666666716337204, 0.1666666716337204, 0.1666666716337204]]),
    ('cummax_ties', 'lambda x: jnp.sum(lax.cummax(x) * jnp.arange(1., 6.))',
     'jnp.array([1., 1., 0., 1., 2.])', [[4.5, 3.5, 0.0, 2.0, 5.0]]),
    ('cummin_ties', 'lambda x: jnp.sum(lax.cummin(x) * jnp.arange(1., 6.))',
     'jnp.array([1., 1., 2., 1., 0.])', [[4.5, 3.5, 0.0, 2.0, 5.0]]),
    ('cummax_reverse_ties', 'lambda x: jnp.sum(lax.cummax(x, reverse=True) * jnp.arange(1., 4.))',
     'jnp.array([2., 1., 1.])', [[1.0, 1.0, 4.0]]),
    ('cummin_reverse_ties', 'lambda x: jnp.sum(lax.cummin(x, reverse=True) * jnp.arange(1., 4.))',
     'jnp.array([1., 1., 2.])', [[0.5, 2.5, 3.0]]),
    # Three or more tied elements: the split follows the odd/even recursion of
    # lax.associative_scan, through which JAX differentiates every cumulative reduction.
    ('cummax_three_ties', 'lambda x: jnp.sum(lax.cummax(x) * jnp.arange(1., 4.))',
     'jnp.zeros(3)', [[2.75, 1.75, 1.5]]),
    ('cummin_reverse_five_ties',
     'lambda x: jnp.sum(lax.cummin(x, reverse=True) * jnp.arange(1., 6.))',
     'jnp.zeros(5)', [[0.5, 0.625, 2.125, 3.375, 8.375]]),
    # cumlogsumexp is smooth: d y_i / d x_j = exp(x_j - y_i), ties included.
    ('cumlogsumexp_ties', 'lambda x: jnp.sum(lax.cumlogsumexp(x) * jnp.arange(1., 4.))',
     'jnp.ones(3)', [[3.0, 2.0, 1.0]]),
    ('cumlogsumexp_reverse_ties',
     'lambda x: jnp.sum(lax.cumlogsumexp(x, reverse=True) * jnp.arange(1., 5.))',
     'jnp.array([0., 0., 2., 2.])',
     [[0.05960145592689514, 0.18635934591293335, 2.8770196437835693, 6.877019882202148]]),
    ('cumlogsumexp_minus_inf_prefix',
     'lambda x: jnp.sum(lax.cumlogsumexp(x) * jnp.arange(1., 4.))',
     'jnp.array([-np.inf, -np.inf, 2.])', [[nan, nan, 3.0]]),
    ('max_pool_ties',
     "lambda x: jnp.sum(lax.reduce_window(x, -np.inf, lax.max, (2,), (1,), 'VALID'))",
     'jnp.array([1., 1., 1.])', [[1.0, 1.0, 0.0]]),
    ('norm_at_0', 'jnp.linalg.norm',
     'jnp.zeros(3)', [[nan, nan, nan]]),
    ('norm_ord1_at_0', 'lambda x: jnp.linalg.norm(x, 1)',
     'jnp.zeros(3)', [[1.0, 1.0, 1.0]]),
    ('norm_inf_at_0', 'lambda x: jnp.linalg.norm(x, np.inf)',
     'jnp.zeros(3)', [[0.1666666716337204, 0.1666666716337204, 0.1666666716337204]]),
    ('norm_inf_ties', 'lambda x: jnp.linalg.norm(x, np.inf)',
     'jnp.array([1., -1., 0.5])', [[0.5, -0.5, 0.0]]),
    ('matrix_norm_1_at_0', 'lambda x: jnp.linalg.norm(x, 1)',
     'jnp.zeros((2, 2))', [[[0.25, 0.25], [0.25, 0.25]]]),
    ('matrix_norm_inf_at_0', 'lambda x: jnp.linalg.norm(x, np.inf)',
     'jnp.zeros((2, 2))', [[[0.25, 0.25], [0.25, 0.25]]]),
    ('pow_float_zero_exponent_at_0', 'lambda x: x ** 0.',
     '0.', [nan]),
    ('pow_both_at_0', 'lambda x, y: x ** y',
     '0., 0.', [nan, 0.0]),
    ('pow_half_at_0', 'lambda x, y: x ** y',
     '0., 0.5', [inf, 0.0]),
    ('int_pow_zero_at_0', 'lambda x: x ** 0',
     '0.', [0.0]),
    ('where_safe_sqrt', 'lambda x: jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.)), 0.)',
     '0.', [0.0]),
    ('where_unsafe_sqrt', 'lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.)',
     '0.', [nan]),
    ('entr_at_0', 'jax.scipy.special.entr',
     '0.', [inf]),
    ('xlogy_at_0', 'lambda x, y: jax.scipy.special.xlogy(x, y)',
     '0., 0.', [-inf, nan]),
    ('logsumexp_ties', 'jax.nn.logsumexp',
     'jnp.array([1., 1.])', [[0.5, 0.5]]),
    ('copysign_at_0', 'lambda x, y: jnp.copysign(x, y)',
     '0., 0.', [1.0, 0.0]),
    ('median_ties', 'jnp.median',
     'jnp.array([1., 1., 1., 2.])', [[0.0, 0.5, 0.5, 0.0]]),
    ('argmax_take_ties', 'lambda x: x[jnp.argmax(x)]',
     'jnp.array([1., 2., 2.])', [[0.0, 1.0, 0.0]]),
    ('gather_out_of_bounds', 'lambda x: jnp.sum(x[jnp.array([0, 5, -7])])',
     'jnp.arange(3.)', [[1.0, 0.0, 0.0]]),
    ('gather_fill_out_of_bounds',
     "lambda x: jnp.sum(x.at[jnp.array([0, 5])].get(mode='fill', fill_value=0.))",
     'jnp.arange(3.)', [[1.0, 0.0, 0.0]]),
    ('take_clip_out_of_bounds', "lambda x: jnp.sum(jnp.take(x, jnp.array([0, 5]), mode='clip'))",
     'jnp.arange(3.)', [[1.0, 0.0, 1.0]]),
    ('logit_at_0', 'jax.scipy.special.logit',
     '0.', [inf]),
    ('logit_at_1', 'jax.scipy.special.logit',
     '1.', [inf]),
    ('arccosh_at_minus_1', 'jnp.arccosh',
     '-1.', [inf]),
    ('i0_at_6', 'jnp.i0',
     '6.', [61.341957092285156]),
    ('hard_silu_at_3', 'jax.nn.hard_silu',
     '3.', [1.0]),
    ('gelu_at_0', 'jax.nn.gelu',
     '0.', [0.5]),
    ('static_index_out_of_bounds', 'lambda x: x[11]',
     'jnp.arange(5.)', [[0.0, 0.0, 0.0, 0.0, 1.0]]),
    ('static_negative_index_out_of_bounds', 'lambda x: x[-12]',
     'jnp.arange(5.)', [[1.0, 0.0, 0.0, 0.0, 0.0]]),
]
_IDS = [c[0] for c in CASES]


def _build(jax, jnp, lax, fsrc, asrc):
    env = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
    return eval(fsrc, env), eval(f"({asrc},)", env)


def _grads(jax, jnp, lax, fsrc, asrc, jit=False):
    fn, args = _build(jax, jnp, lax, fsrc, asrc)
    g = jax.grad(fn, argnums=tuple(range(len(args))))
    if jit:
        g = jax.jit(g)
    return [np.asarray(v, np.float64) for v in g(*args)]


def _assert_grads(name, got, want):
    assert len(got) == len(want), name
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, np.asarray(w, np.float64), rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name}: gradient w.r.t. argument {k}")


@pytest.mark.parametrize("jit", [False, True], ids=["grad", "jit_grad"])
@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_gradient_matches_jax_convention(case, jit):
    name, fsrc, asrc, want = case
    _assert_grads(name, _grads(minijax, mjnp, mlax, fsrc, asrc, jit), want)


def test_hard_coded_values_are_jax_values():
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    from jax import lax as jlax
    with jax.default_device(jax.devices("cpu")[0]):
        for name, fsrc, asrc, want in CASES:
            _assert_grads(name, _grads(jax, jjnp, jlax, fsrc, asrc), want)


def test_logaddexp_tie_gradient_under_vmap():
    x = mjnp.array([0., 1., -3.])
    g = minijax.vmap(minijax.grad(lambda a: mjnp.logaddexp(a, a * 1.0)))(x)
    # d/da log(2 e^a) = 1 (both halves of the tie).
    np.testing.assert_allclose(np.asarray(g), [1., 1., 1.])
    sp = minijax.vmap(minijax.grad(minijax.nn.softplus))(mjnp.zeros(3))
    np.testing.assert_allclose(np.asarray(sp), [0.5, 0.5, 0.5])
