"""minijax's derivatives at kinks, ties and special points against JAX 0.10.2 (values
hard-coded, and checked live against real JAX when it is importable).

Each case is a function written against (jax, jnp, lax, np), its arguments, a mode (grad of
the output's sum, jacfwd or jacrev, w.r.t. every argument) and JAX's answer as (shape, flat
values). minijax runs it eagerly and under jit; values must agree to float32 rounding with
NaN/inf placement and the sign of zero exact. The first block pins the differences the
campaign in tests/grid_jax_grad_kinks.py found and fixed (quantile 'nearest' at a halfway
position, the matrix 2-norm at tied singular values, sinc's derivatives at 0, det and pinv at
singular matrices, ndtri at 0 and 1, second derivatives of logaddexp/softplus at a tie and of
1/y at 0);
the rest is a representative slice of that grid.

Under jit, JAX's Jacobians at singular points can differ from JAX's own eager ones: XLA's
algebraic simplifier turns multiply(a, convert(pred)) into select(pred, a, 0), dropping the NaN
of 0 * inf in the one-hot basis. minijax keeps the arithmetic of the AD rules, so the values
here are JAX's eager ones and minijax gives them under jit too. Conventions already pinned in
tests/test_grad_conventions.py are not repeated.
"""

import math

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax import lax as mlax

nan, inf = math.nan, math.inf

# (name, function source, arguments source, mode, JAX's derivative w.r.t. each argument)
CASES = [
    ('quantile_nearest_halfway',
     "lambda x: jnp.quantile(x, 0.5, method='nearest')",
     'jnp.array([1., 1., 2., 2.])', 'grad',
     [((4,), [0., 1.0, 0., 0.])]),
    ('quantile_nearest_q',
     "lambda x: jnp.quantile(x, jnp.array([0.1, 0.5, 5 / 6]), method='nearest')",
     'jnp.array([3., 1., 2., 4.])', 'jacrev',
     [((3, 4), [0., 1.0, 0., 0., 0., 0., 1.0, 0., 1.0, 0., 0., 0.])]),
    ('percentile_nearest_axis',
     "lambda x: jnp.percentile(x, 50., axis=1, method='nearest')",
     'jnp.array([[4., 3., 2., 1.], [1., 1., 2., 2.]])', 'jacfwd',
     [((2, 2, 4), [0., 0., 1.0, 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 1.0, 0., 0.])]),
    ('matrix_norm2_at_0',
     'lambda x: jnp.linalg.norm(x, 2)',
     'jnp.zeros((2, 2))', 'grad',
     [((2, 2), [0.25, 0., 0., 0.25])]),
    ('matrix_norm2_ties',
     'lambda x: jnp.linalg.norm(x, 2)',
     'jnp.array([[3., 0.], [0., -3.]])', 'jacrev',
     [((2, 2), [0.5, 0., 0., -0.5])]),
    ('matrix_norm_minus2_ties',
     'lambda x: jnp.linalg.norm(x, -2)',
     'jnp.eye(2) * 2.', 'jacfwd',
     [((2, 2), [0.5, 0., 0., 0.5])]),
    ('sinc_grad_signed_zero',
     'jnp.sinc',
     'jnp.array([0., -0., 0.5])', 'jacfwd',
     [((3, 3), [0., 0., 0., -0., -0., -0., -0., -0., -1.2732396125793457])]),
    ('sinc_second_derivative_at_0',
     'lambda x: jax.grad(jnp.sinc)(x)',
     '0.', 'grad',
     [((), [-3.2898683547973633])]),
    ('sinc_fourth_derivative_at_0',
     'jax.grad(jax.grad(jax.grad(jnp.sinc)))',
     'jnp.array(0.)', 'jacrev',
     [((), [19.481821060180664])]),
    ('det_zero_2x2',
     'jnp.linalg.det',
     'jnp.zeros((2, 2))', 'grad',
     [((2, 2), [0., 0., 0., 0.])]),
    ('det_rank1_2x2',
     'jnp.linalg.det',
     'jnp.array([[1., 2.], [2., 4.]])', 'jacrev',
     [((2, 2), [4.0, -2.0, -2.0, 1.0])]),
    ('det_nilpotent_2x2',
     'jnp.linalg.det',
     'jnp.array([[0., 1.], [0., 0.]])', 'grad',
     [((2, 2), [0., 0., -1.0, 0.])]),
    ('det_rank2_3x3',
     'jnp.linalg.det',
     'jnp.diag(jnp.array([0., 1., 2.]))', 'jacfwd',
     [((3, 3), [2.0, 0., 0., 0., 0., 0., 0., 0., 0.])]),
    ('det_rank3_4x4',
     'jnp.linalg.det',
     'jnp.diag(jnp.array([1., 2., 3., 0.]))', 'grad',
     [((4, 4), [0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 6.0])]),
    ('det_rank3_4x4_fwd',
     'jnp.linalg.det',
     'jnp.diag(jnp.array([1., 2., 3., 0.]))', 'jacfwd',
     [((4, 4), [0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 6.0])]),
    ('det_rank1_4x4',
     'jnp.linalg.det',
     'jnp.outer(jnp.array([1., 2., 3., 4.]), jnp.array([1., 0., 1., 2.]))', 'jacrev',
     [((4, 4), [0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.])]),
    ('det_zero_4x4',
     'jnp.linalg.det',
     'jnp.zeros((4, 4))', 'grad',
     [((4, 4), [0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.])]),
    ('det_regular_5x5',
     'jnp.linalg.det',
     'jnp.eye(5) * 2. + jnp.tri(5, k=-1) * 0.5', 'grad',
     [((5, 5), [16.0, -4.0, -3.0, -2.25, -1.6875, 0., 16.0, -4.0, -3.0, -2.25, 0., 0., 16.0, -4.0,
          -3.0, 0., 0., 0., 16.0, -4.0, 0., 0., 0., 0., 16.0])]),
    ('det_batch',
     'lambda x: jnp.linalg.det(x)',
     'jnp.stack([jnp.zeros((4, 4)), jnp.eye(4) * 2.])', 'grad',
     [((2, 4, 4), [0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 8.0, 0., 0., 0.,
          0., 8.0, 0., 0., 0., 0., 8.0, 0., 0., 0., 0., 8.0])]),
    ('pinv_zero',
     'jnp.linalg.pinv',
     'jnp.zeros((2, 2))', 'jacrev',
     [((2, 2, 2, 2), [0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.])]),
    ('pinv_zero_wide',
     'lambda x: jnp.sum(jnp.linalg.pinv(x) ** 2)',
     'jnp.zeros((2, 3))', 'grad',
     [((2, 3), [0., 0., 0., 0., 0., 0.])]),
    ('pinv_rank1',
     'lambda x: jnp.sum(jnp.linalg.pinv(x) * jnp.arange(4.).reshape(2, 2))',
     'jnp.array([[1., 2.], [2., 4.]])', 'grad',
     [((2, 2), [-0.03840000927448273, -0.044800009578466415, -0.08480002731084824,
          -0.1056000366806984])]),
    ('pinv_hermitian',
     'lambda x: jnp.linalg.pinv(x, hermitian=True)',
     'jnp.array([[2., 1.], [1., 2.]])', 'jacfwd',
     [((2, 2, 2, 2), [-0.44444432854652405, 0.22222216427326202, 0.22222216427326202,
          -0.1111110970377922, 0.22222217917442322, -0.27777767181396484,
          -0.27777767181396484, 0.22222216427326202, 0.22222216427326202,
          -0.27777767181396484, -0.27777767181396484, 0.22222214937210083,
          -0.1111110970377922, 0.22222216427326202, 0.22222216427326202, -0.4444442689418793])]),
    ('ndtri_endpoints',
     'jax.scipy.special.ndtri',
     'jnp.array([0., 1., 0.5, -0.5])', 'jacfwd',
     [((4, 4), [0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 2.5066282749176025, 0.,
                nan, nan, nan, nan])]),
    ('softplus_second_derivative',
     'jax.vmap(jax.grad(jax.nn.softplus))',
     'jnp.array([-2., -0., 0., 1.])', 'jacfwd',
     [((4, 4), [0.10499357432126999, 0., 0., 0., 0., 0.25, 0., 0., 0., 0., 0.25, 0., 0., 0., 0.,
          0.19661195576190948])]),
    ('logaddexp_tie_second_derivative',
     'lambda x: jax.grad(lambda y: jnp.sum(jnp.logaddexp(y, 2 * y)))(x)',
     'jnp.array([0., 1.])', 'jacrev',
     [((2, 2), [0.25, 0., 0., 0.19661211967468262])]),
    ('logaddexp2_log_sigmoid_hessian',
     'lambda x: jax.grad(lambda y: jnp.sum(jnp.logaddexp2(y, 0.) + '
     'jax.nn.log_sigmoid(y)))(x)',
     'jnp.array([0., -0.])', 'jacfwd',
     [((2, 2), [-0.0767132043838501, 0., 0., -0.0767132043838501])]),
    ('div_second_derivative_at_0',
     'lambda x: jax.grad(lambda y: jnp.sum(3. / y + jnp.reciprocal(y)))(x)',
     'jnp.array([0., -0., 2.])', 'grad',
     [((3,), [inf, -inf, 1.0])]),
    ('abs_sign_kinks',
     'lambda x: jnp.abs(x) + jnp.sign(x)',
     'jnp.array([-1., -0., 0., 2.])', 'jacrev',
     [((4, 4), [-1.0, 0., 0., 0., 0., 1.0, 0., 0., 0., 0., 1.0, 0., 0., 0., 0., 1.0])]),
    ('maximum_signed_zero_ties',
     'jnp.maximum',
     'jnp.array([1., 0., -0.]), jnp.array([1., -0., 0.])', 'jacfwd',
     [((3, 3), [0.5, 0., 0., 0., 0.5, 0., 0., 0., 0.5]),
      ((3, 3), [0.5, 0., 0., 0., 0.5, 0., 0., 0., 0.5])]),
    ('max_axis_ties',
     'lambda x: jnp.max(x, axis=1)',
     'jnp.array([[1., 2., 2.], [0., 0., 0.]])', 'jacrev',
     [((2, 2, 3), [0., 0.5, 0.5, 0., 0., 0., 0., 0., 0., 0.3333333432674408, 0.3333333432674408,
          0.3333333432674408])]),
    ('reduce_min_ties',
     'lambda x: lax.reduce_min(x, axes=(1,))',
     'jnp.array([[1., 1.], [1., 3.]])', 'jacfwd',
     [((2, 2, 2), [0.5, 0.5, 0., 0., 0., 0., 1.0, 0.])]),
    ('argmax_take_along',
     'lambda x: jnp.take_along_axis(x, jnp.argmax(x, axis=1, keepdims=True), '
     'axis=1)',
     'jnp.array([[1., 2., 2.], [0., 0., 0.]])', 'jacrev',
     [((2, 1, 2, 3), [0., 1.0, 0., 0., 0., 0., 0., 0., 0., 1.0, 0., 0.])]),
    ('clip_bounds',
     'lambda x: jnp.clip(x, -1., 1.)',
     'jnp.array([-2., -1., 0., 1., 2.])', 'jacfwd',
     [((5, 5), [0., 0., 0., 0., 0., 0., 0.5, 0., 0., 0., 0., 0., 1.0, 0., 0., 0., 0., 0., 0.5, 0.,
          0., 0., 0., 0., 0.])]),
    ('nn_kinks',
     'lambda x: jax.nn.relu6(x) + jax.nn.hard_tanh(x) + jax.nn.leaky_relu(x) + '
     'jax.nn.celu(x) + jax.nn.selu(x)',
     'jnp.array([-1., 0., 1., 6.])', 'jacrev',
     [((4, 4), [2.0246481895446777, 0., 0., 0., 0., 4.758099555969238, 0., 0., 0., 0.,
          5.050701141357422, 0., 0., 0., 0., 3.050701141357422])]),
    ('gelu_silu_at_0',
     'lambda x: jax.nn.gelu(x, approximate=True) + 2 * jax.nn.gelu(x, '
     'approximate=False) + 4 * jax.nn.silu(x)',
     'jnp.array([0., -0.])', 'jacfwd',
     [((2, 2), [3.5, 0., 0., 3.5])]),
    ('sqrt_cbrt_at_0',
     'lambda x: jnp.sqrt(x) + jnp.cbrt(x)',
     'jnp.array([0., -0., 1.])', 'grad',
     [((3,), [inf, nan, 0.8333333730697632])]),
    ('pow_at_0',
     'lambda x, y: x ** y',
     'jnp.zeros(5), jnp.array([0., 0.5, 1., 2., 3.])', 'grad',
     [((5,), [nan, inf, 1.0, 0., 0.]),
      ((5,), [0., 0., 0., 0., 0.])]),
    ('pow_negative_base',
     'lambda x, y: x ** y',
     'jnp.array([-2., -2., -1.]), jnp.array([2., 3., -1.])', 'grad',
     [((3,), [-4.0, 12.0, -1.0]),
      ((3,), [nan, nan, nan])]),
    ('int_pow_vs_mul',
     'lambda x: x ** 3 - x * x * x + x ** -1',
     'jnp.array([0., -0., -2.])', 'jacfwd',
     [((3, 3), [-inf, nan, nan, nan, -inf, nan, 0., 0., -0.25])]),
    ('log_family_at_0',
     'lambda x: jnp.log(x) + jnp.log1p(x) + jnp.expm1(x)',
     'jnp.array([0., -0., -1.])', 'grad',
     [((3,), [inf, -inf, inf])]),
    ('xlogy_xlog1py',
     'lambda x, y: jax.scipy.special.xlogy(x, y) + jax.scipy.special.xlog1py(x, y'
     ' - 1.)',
     'jnp.array([0., 0., 1.]), jnp.array([0., 1., 0.])', 'grad',
     [((3,), [-inf, 0., -inf]),
      ((3,), [nan, 0., inf])]),
    ('where_masked_sqrt',
     'lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.)',
     'jnp.array([-1., 0., 4.])', 'grad',
     [((3,), [nan, nan, 0.25])]),
    ('vector_norms_at_0',
     'lambda x: jnp.linalg.norm(x, 1) + jnp.linalg.norm(x, np.inf) + '
     'jnp.linalg.norm(x, -np.inf) + jnp.linalg.norm(x, 3)',
     'jnp.zeros(3)', 'grad',
     [((3,), [nan, nan, nan])]),
    ('matrix_norms_at_0',
     "lambda x: jnp.linalg.norm(x, 'fro') + jnp.linalg.norm(x, 'nuc')",
     'jnp.zeros((2, 2))', 'grad',
     [((2, 2), [nan, nan, nan, nan])]),
    ('logsumexp_minus_inf',
     'lambda x: jax.nn.logsumexp(x, axis=1)',
     'jnp.array([[-np.inf, -np.inf], [0., -np.inf]])', 'jacfwd',
     [((2, 2, 2), [nan, nan, nan, nan, 0., 0., 1.0, 0.])]),
    ('softmax_minus_inf',
     'jax.nn.softmax',
     'jnp.array([-np.inf, 0., 1.])', 'jacrev',
     [((3, 3), [0., 0., 0., -0., 0.1966119259595871, -0.19661197066307068, -0.,
          -0.19661197066307068, 0.19661188125610352])]),
    ('sort_argsort_ties',
     'lambda x: jnp.sort(x) * jnp.arange(1., 5.) + x[jnp.argsort(x)]',
     'jnp.array([2., 1., 2., 1.])', 'jacrev',
     [((4, 4), [0., 2.0, 0., 0., 0., 0., 0., 3.0, 4.0, 0., 0., 0., 0., 0., 5.0, 0.])]),
    ('top_k_median_quantile_ties',
     'lambda x: lax.top_k(x, 2)[0].sum() + jnp.median(x) + jnp.quantile(x, 0.25)',
     'jnp.array([2., 1., 2., 1.])', 'grad',
     [((4,), [1.5, 0.25, 1.0, 1.25])]),
    ('cummax_cummin_ties',
     'lambda x: lax.cummax(x) + 2 * lax.cummin(x)',
     'jnp.array([1., 1., 0., 1.])', 'jacfwd',
     [((4, 4), [3.0, 0., 0., 0., 1.5, 1.5, 0., 0., 0.5, 0.5, 2.0, 0., 0.25, 0.25, 2.0, 0.5])]),
    ('rounding',
     'lambda x: jnp.round(x) + jnp.floor(x) + jnp.ceil(x) + jnp.trunc(x)',
     'jnp.array([0.5, 1.5, -1.])', 'grad',
     [((3,), [0., 0., 0.])]),
    ('remainder_fmod_multiples',
     'lambda x, y: jnp.remainder(x, y) + jnp.fmod(x, y)',
     'jnp.array([4., -4., 3.]), jnp.array([2., 2., 1.5])', 'grad',
     [((3,), [2.0, 2.0, 2.0]),
      ((3,), [-4.0, 4.0, -4.0])]),
    ('arctan2_hypot_at_0',
     'lambda x, y: jnp.arctan2(x, y) + jnp.hypot(x, y)',
     'jnp.array([0., -0., 1.]), jnp.array([0., 0., 0.])', 'grad',
     [((3,), [nan, nan, 1.0]),
      ((3,), [nan, nan, -1.0])]),
    ('arcsin_arctanh_at_1',
     'lambda x: jnp.arcsin(x) + jnp.arctanh(x)',
     'jnp.array([1., -1., 0.])', 'grad',
     [((3,), [inf, inf, 2.0])]),
    ('prod_with_zeros',
     'jnp.prod',
     'jnp.array([2., 0., 3.])', 'grad',
     [((3,), [0., 6.0, 0.])]),
]
_IDS = [c[0] for c in CASES]


def _run(jax, jnp, lax, fsrc, asrc, mode, jit=False):
    env = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
    fn, args = eval(fsrc, env), eval(f"({asrc},)", env)
    argnums = tuple(range(len(args)))
    if mode == "grad":
        d = jax.grad(lambda *a: jnp.sum(fn(*a)), argnums=argnums)
    else:
        d = getattr(jax, mode)(fn, argnums=argnums)
    if jit:
        d = jax.jit(d)
    return [np.asarray(v) for v in d(*args)]


def assert_same(name, got, want):
    """Equal shapes; NaN and inf placement and the sign of zeros exact; other values to
    float32 rounding."""
    assert len(got) == len(want), name
    for k, (g, (shape, flat)) in enumerate(zip(got, want, strict=True)):
        msg = f"{name}: derivative w.r.t. argument {k}"
        assert g.shape == tuple(shape), msg
        g = g.astype(np.float64).ravel()
        w = np.asarray(flat, np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=msg + " (NaNs)")
        np.testing.assert_array_equal(np.signbit(g[g == 0]), np.signbit(w[g == 0]),
                                      err_msg=msg + " (signs of zeros)")
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6, err_msg=msg)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_derivative_matches_jax(case, jit):
    name, fsrc, asrc, mode, want = case
    assert_same(name, _run(minijax, mjnp, mlax, fsrc, asrc, mode, jit), want)


def test_hard_coded_values_are_jax_values():
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    from jax import lax as jlax
    with jax.default_device(jax.devices("cpu")[0]):
        for name, fsrc, asrc, mode, want in CASES:
            assert_same(name, _run(jax, jjnp, jlax, fsrc, asrc, mode), want)


def test_quantile_nearest_values_match_jax_not_numpy():
    # JAX takes the lower neighbour at a halfway position; numpy rounds it to even.
    x = mjnp.array([1., 2., 3., 4.])
    got = mjnp.quantile(x, mjnp.array([0.5, 1 / 6, 5 / 6, 0.1, 0.2]), method="nearest")
    np.testing.assert_array_equal(np.asarray(got), [2., 1., 3., 1., 2.])
    np.testing.assert_array_equal(np.asarray(mjnp.percentile(x, 50., method="nearest")), 2.)


def test_sinc_higher_derivatives_at_0():
    # sin(pi x) / (pi x) = 1 - (pi x)^2 / 6 + (pi x)^4 / 120 - ...
    d2 = minijax.grad(minijax.grad(mjnp.sinc))
    d3 = minijax.grad(d2)
    d4 = minijax.grad(d3)
    np.testing.assert_allclose(float(d2(0.)), -math.pi ** 2 / 3, rtol=1e-6)
    assert float(d3(0.)) == 0
    np.testing.assert_allclose(float(d4(0.)), math.pi ** 4 / 5, rtol=1e-5)
    np.testing.assert_allclose(float(minijax.jit(d2)(0.)), -math.pi ** 2 / 3, rtol=1e-6)
    got = minijax.vmap(minijax.hessian(mjnp.sinc))(mjnp.array([0., 0.5]))
    # At 0.5: d2/dx2 of sin(pi x)/(pi x) = -pi sin(pi x)/x ... by finite differences.
    h = 1e-3
    f = np.sinc
    fd = (f(0.5 + h) - 2 * f(0.5) + f(0.5 - h)) / h ** 2
    np.testing.assert_allclose(np.asarray(got), [-math.pi ** 2 / 3, fd], rtol=1e-3)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_det_gradient_is_the_adjugate(jit):
    # Random rank-deficient and regular matrices of size 4 and 5 (the LU path): the gradient
    # is the adjugate's transpose, adj(A)^T = cofactor matrix, computed here by minors.
    rng = np.random.default_rng(0)
    grad = minijax.grad(mjnp.linalg.det)
    if jit:
        grad = minijax.jit(grad)
    for n, rank in ((4, 4), (4, 3), (5, 4), (5, 5)):
        a = (rng.standard_normal((n, rank)) @ rng.standard_normal((rank, n)))
        cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                         for j in range(n)] for i in range(n)])
        got = np.asarray(grad(a.astype(np.float32)), np.float64)
        np.testing.assert_allclose(got, cof, rtol=2e-3, atol=2e-3 * np.abs(cof).max())


def test_jacrev_allow_int_gives_integer_zeros():
    x = mjnp.array([1, -1, 0])
    for jit in (False, True):
        jac = minijax.jacrev(lambda v, w: v * w, argnums=(0, 1), allow_int=True)
        jac = minijax.jit(jac) if jit else jac
        ji, jf = jac(x, mjnp.ones(3))
        assert isinstance(ji, minijax.Array) and ji.dtype == np.int32 and ji.shape == (3, 3)
        assert not np.asarray(ji).any()
        np.testing.assert_array_equal(np.asarray(jf), np.diag([1., -1., 0.]))
