"""JAX programs for the XLA-module differential campaign (needs jax; imported lazily).

`programs(jax)` returns name -> (function, example arguments, needs_x64). The functions cover
what XLA:CPU rewrites most: elementwise chains, reductions, dots with batch dimensions,
convolutions, gathers and scatters, sorts and top-k, cumulative sums, loops, conditionals,
random bits, normalizations, attention, gradients, vmap and every element type.
"""

from __future__ import annotations

import numpy as np


def programs(jax):  # noqa: C901, PLR0915 - one flat table of small programs
    """name -> (function, args, needs_x64)."""
    jnp, lax = jax.numpy, jax.lax
    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def i32(hi, *shape):
        return rng.integers(0, hi, shape).astype(np.int32)

    key = np.array([0, 42], np.uint32)
    P = {}

    def add(name, f, *args, x64=False):
        P[name] = (f, args, x64)

    # elementwise chains and dtypes
    add("ew_chain", lambda x, y: jnp.tanh(x * y + 1.0) * jnp.exp(-x * x) - jnp.sqrt(jnp.abs(y)),
        f32(4, 7), f32(4, 7))
    add("ew_transcend", lambda x: (jnp.log1p(jnp.abs(x)), jnp.expm1(x), jnp.sin(x) * jnp.cos(x),
                                   jnp.arctan2(x, 1.5), jnp.erf(x) if hasattr(jnp, "erf") else
                                   jax.scipy.special.erf(x), jax.nn.sigmoid(x)), f32(5, 6))
    add("ew_int", lambda a, b: (a // (b + 1), a % (b + 1), a << 2, a >> 1, a & b, a | b, a ^ b,
                                jnp.maximum(a, b), -a, jnp.abs(a - b)), i32(50, 3, 5),
        i32(9, 3, 5))
    add("ew_bool", lambda a, b: (jnp.logical_and(a > 0, b < 3), jnp.logical_not(a > b),
                                 jnp.where(a > b, a, b)), i32(5, 4, 4), i32(5, 4, 4))
    add("ew_f16", lambda x: (x.astype(jnp.float16) * 3 + 1).astype(jnp.float16) ** 2, f32(3, 8))
    add("ew_bf16", lambda x: jnp.exp(x.astype(jnp.bfloat16)) * jnp.bfloat16(2) + 1, f32(3, 8))
    add("ew_bf16_in", lambda x, y: (x + y, jnp.sum(x * y, axis=1)),
        f32(3, 8).astype(jnp.bfloat16), f32(3, 8).astype(jnp.bfloat16))
    add("ew_f64", lambda x: jnp.exp(x) * jnp.log(jnp.abs(x) + 1) + jnp.sin(x),
        rng.standard_normal((4, 5)), x64=True)
    add("ew_i64", lambda a: (a * 3 + 7) // 2 + jnp.sum(a), rng.integers(-99, 99, (6,)),
        x64=True)
    add("ew_complex", lambda x, y: (jnp.abs(lax.complex(x, y) * lax.complex(y, x)),
                                    jnp.exp(lax.complex(x, y)).real,
                                    (lax.complex(x, y) ** 2).imag), f32(5), f32(5))
    add("ew_complex_in", lambda z: (z * jnp.conj(z) + 1j, jnp.abs(z), jnp.angle(z)),
        (f32(6) + 1j * f32(6)).astype(np.complex64))
    add("ew_convert", lambda x: (x.astype(jnp.int32), x.astype(jnp.uint8), (x > 0).astype(
        jnp.float32), x.astype(jnp.int8).astype(jnp.float32)), f32(10) * 50)
    add("ew_uint", lambda a, b: (a * b, a // (b + 1), a >> 3, jnp.minimum(a, b)),
        rng.integers(0, 2**31, (7,)).astype(np.uint32), rng.integers(0, 9, (7,)).astype(
            np.uint32))
    add("clamp_round", lambda x: (jnp.clip(x, -0.5, 0.5), jnp.round(x * 3), jnp.floor(x),
                                  jnp.ceil(x), jnp.sign(x), lax.round(x, lax.RoundingMethod
                                                                      .TO_NEAREST_EVEN)),
        f32(9) * 2)
    add("is_finite", lambda x: (jnp.isfinite(x / (x - x[0])), jnp.nan_to_num(jnp.log(x))),
        f32(8))
    add("reduce_precision", lambda x: lax.reduce_precision(x, 5, 10) + lax.reduce_precision(
        x * 3, 8, 7), f32(12))
    add("popcnt_clz", lambda a: (lax.population_count(a), lax.clz(a)), i32(1 << 20, 9))
    add("nextafter_rem", lambda x, y: (jnp.nextafter(x, y), jnp.fmod(x, y + 3), lax.rem(x, y)),
        f32(6), f32(6))

    # reductions
    add("reduce_sum_axes", lambda x: (jnp.sum(x, axis=0), jnp.sum(x, axis=(1, 2)), jnp.sum(x)),
        f32(3, 4, 5))
    add("reduce_minmax", lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=0), jnp.prod(x[:, :3],
                                                                                     axis=1)),
        f32(6, 7))
    add("reduce_int_bool", lambda a: (jnp.sum(a, axis=1), jnp.any(a > 7, axis=0),
                                      jnp.all(a > 0, axis=1), jnp.max(a)), i32(10, 4, 6))
    add("argmax_argmin", lambda x: (jnp.argmax(x, axis=0), jnp.argmin(x, axis=1)), f32(5, 8))
    add("mean_var", lambda x: (jnp.mean(x, axis=-1), jnp.var(x, axis=0), jnp.std(x)), f32(6, 9))
    add("logsumexp", lambda x: jax.scipy.special.logsumexp(x, axis=1), f32(4, 11))
    add("reduce_window", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1),
                                                     (1, 2, 2, 1), "VALID"), f32(2, 6, 6, 3))
    add("avg_pool", lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1),
                                                "SAME") / 9.0, f32(1, 5, 5, 2))

    # dots
    add("dot_mv", lambda a, b: a @ b, f32(6, 5), f32(5))
    add("dot_mm", lambda a, b: a @ b, f32(17, 9), f32(9, 13))
    add("dot_mm_t", lambda a, b: a.T @ b.T, f32(9, 17), f32(13, 9))
    add("dot_batch", lambda a, b: jnp.einsum("bij,bjk->bik", a, b), f32(3, 4, 5), f32(3, 5, 6))
    add("einsum_multi", lambda a, b: jnp.einsum("abcd,dbe->ace", a, b), f32(2, 3, 4, 5),
        f32(5, 3, 6))
    add("dot_int", lambda a, b: a @ b, i32(5, 4, 6), i32(5, 6, 3))
    add("dot_bf16", lambda a, b: (a.astype(jnp.bfloat16) @ b.astype(jnp.bfloat16)), f32(8, 16),
        f32(16, 4))
    add("dot_f64", lambda a, b: a @ b, rng.standard_normal((5, 6)), rng.standard_normal((6, 2)),
        x64=True)
    add("outer_vdot", lambda a, b: (jnp.outer(a, b), jnp.vdot(a, a)), f32(5), f32(4))

    # convolutions
    add("conv_nhwc", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        f32(2, 7, 7, 3), f32(3, 3, 3, 4))
    add("conv_strided_dilated", lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), [(1, 1), (0, 2)], lhs_dilation=(1, 1), rhs_dilation=(2, 1),
        dimension_numbers=("NCHW", "OIHW", "NCHW")), f32(1, 2, 9, 8), f32(3, 2, 2, 3))
    add("conv_grouped", lambda x, w: lax.conv_general_dilated(
        x, w, (1,), "VALID", feature_group_count=2, dimension_numbers=("NWC", "WIO", "NWC")),
        f32(2, 10, 4), f32(3, 2, 6))
    add("conv_grad", jax.grad(lambda x, w: jnp.sum(lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2), argnums=(0, 1)),
        f32(1, 5, 5, 2), f32(3, 3, 2, 3))
    add("conv1d_np", lambda a, b: jnp.convolve(a, b, mode="same"), f32(20), f32(5))

    # indexing
    add("gather_rows", lambda x, i: x[i], f32(8, 5), np.array([7, 0, 3, 3], np.int32))
    add("gather_2d", lambda x, i, j: x[i, j], f32(6, 7), i32(6, 5), i32(7, 5))
    add("gather_slice_dyn", lambda x, s: lax.dynamic_slice(x, (s, 1), (3, 4)), f32(8, 6),
        np.int32(4))
    add("take_along", lambda x, i: jnp.take_along_axis(x, i, axis=1), f32(4, 6), i32(6, 4, 3))
    add("scatter_set", lambda x, i, u: x.at[i].set(u), f32(7, 3),
        np.array([5, 1, 2], np.int32), f32(3, 3))
    add("scatter_add_dup", lambda x, i, u: x.at[i].add(u), f32(7, 3),
        np.array([1, 1, 6, 1], np.int32), f32(4, 3))
    add("scatter_max_2d", lambda x, i, j, u: x.at[i, j].max(u), f32(5, 5), i32(5, 8), i32(5, 8),
        f32(8))
    add("dyn_update", lambda x, u, s: lax.dynamic_update_slice(x, u, (s, 2)), f32(6, 6),
        f32(2, 3), np.int32(3))
    add("slicing", lambda x: (x[1:5:2, ::-1], x[..., 2], jnp.flip(x, 0), x[::3, 1:]),
        f32(7, 6))
    add("pad_concat", lambda x, y: (jnp.pad(x, ((1, 2), (0, 3))), jnp.concatenate([x, y], 1),
                                    lax.pad(x, 0.0, [(1, -1, 1), (0, 0, 2)])), f32(3, 4),
        f32(3, 2))
    add("transpose_reshape", lambda x: (x.transpose(2, 0, 1).reshape(5, 12) * 2, x.reshape(
        4, 15).T + 1), f32(3, 4, 5))
    add("broadcast_iota", lambda x: x[:, None, :] * jnp.arange(4.0)[None, :, None] +
        jnp.eye(4)[0, :, None], f32(3, 5))
    add("one_hot", lambda i: jax.nn.one_hot(i, 6), i32(6, 9))

    # sort family
    add("sort_rows", lambda x: jnp.sort(x, axis=0), f32(6, 5))
    add("argsort", lambda x: jnp.argsort(x, axis=-1), f32(4, 9))
    add("sort_int_desc", lambda a: -jnp.sort(-a), i32(100, 12))
    add("sort_multi", lambda k, v: lax.sort((k, v), num_keys=1), i32(4, 10), f32(10))
    add("top_k", lambda x: lax.top_k(x, 3), f32(4, 10))
    add("top_k_1d", lambda x: lax.top_k(x, 5), f32(40))
    add("sort_nan", lambda x: jnp.sort(x.at[2].set(jnp.nan).at[5].set(-0.0)), f32(9))

    # cumulative ops
    add("cumsum", lambda x: (jnp.cumsum(x, axis=1), jnp.cumprod(x[:, :4], axis=0)), f32(5, 6))
    add("cummax", lambda x: (lax.cummax(x, axis=0), lax.cumlogsumexp(x, axis=1)), f32(5, 6))
    add("cumsum_long", lambda x: jnp.cumsum(x), f32(300))
    add("cumsum_int", lambda a: jnp.cumsum(a, axis=0), i32(9, 40, 3))

    # control flow
    def fori(n, x):
        return lax.fori_loop(0, n, lambda i, c: c * 0.9 + jnp.sin(c) * i, x)

    add("fori_dyn", fori, np.int32(7), f32(5))
    add("fori_static", lambda x: lax.fori_loop(0, 6, lambda i, c: c @ c * 0.5 + 0.1, x),
        f32(3, 3))

    def scan_rnn(h0, xs, w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()
        return lax.scan(step, h0, xs)

    add("scan_rnn", scan_rnn, f32(4), f32(7, 4), f32(4, 4) * 0.5)
    add("scan_reverse", lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs,
                                            reverse=True), f32(8))
    add("while_cond", lambda x: lax.while_loop(lambda c: c[0] < 100.0,
                                               lambda c: (c[0] * 2 + 1, c[1] + 1), (x, 0)),
        np.float32(1.5))
    add("cond", lambda p, x: lax.cond(p > 0, lambda v: jnp.sin(v) * 2, jnp.cos, x),
        np.int32(-1), f32(5))
    add("switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * v], x),
        np.int32(2), f32(4))
    add("map", lambda xs: lax.map(lambda r: jnp.sum(r * r), xs), f32(5, 3))
    add("associative_scan", lambda x: lax.associative_scan(jnp.add, x), f32(13))

    # random
    add("random_normal", lambda k: jax.random.normal(jax.random.wrap_key_data(k), (3, 4)), key)
    add("random_uniform_bits", lambda k: (jax.random.uniform(jax.random.wrap_key_data(k), (7,)),
                                          jax.random.bits(jax.random.wrap_key_data(k), (5,))),
        key)
    add("random_split_perm", lambda k: jax.random.permutation(
        jax.random.split(jax.random.wrap_key_data(k))[1], 10), key)
    add("random_categorical", lambda k, lg: jax.random.categorical(jax.random.wrap_key_data(k),
                                                                   lg), key, f32(4, 6))
    add("rng_bit_generator", lambda k: lax.rng_bit_generator(k, (3, 5), dtype=jnp.uint32),
        np.array([1, 2, 3, 4], np.uint32))
    add("rng_bit_generator_u8", lambda k: lax.rng_bit_generator(k, (16,), dtype=jnp.uint8),
        np.array([5, 6, 7, 8], np.uint32))

    # nn building blocks
    add("softmax", lambda x: jax.nn.softmax(x, axis=-1), f32(5, 8))
    add("layernorm", lambda x, g, b: (x - x.mean(-1, keepdims=True)) * lax.rsqrt(
        x.var(-1, keepdims=True) + 1e-5) * g + b, f32(4, 16), f32(16), f32(16))

    def attention(q, k, v):
        s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
        s = jnp.where(jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool)), s, -1e9)
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), v)

    add("attention", attention, f32(2, 5, 8), f32(2, 5, 8), f32(2, 5, 8))
    add("gelu_silu", lambda x: (jax.nn.gelu(x), jax.nn.silu(x), jax.nn.gelu(x, approximate=False),
                                jax.nn.log_softmax(x)), f32(3, 7))

    def mlp_loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jax.nn.relu(x @ w1 + b1)
        return jnp.mean((h @ w2 + b2 - y) ** 2)

    params = ((f32(6, 16) * 0.3, f32(16) * 0.1), (f32(16, 3) * 0.3, f32(3) * 0.1))
    add("mlp_grad", jax.value_and_grad(mlp_loss), params, f32(8, 6), f32(8, 3))
    add("mlp_sgd_step", lambda p, x, y: jax.tree_util.tree_map(
        lambda a, g: a - 0.1 * g, p, jax.grad(mlp_loss)(p, x, y)), params, f32(8, 6), f32(8, 3))
    add("hessian", jax.hessian(lambda x: jnp.sum(jnp.sin(x) * x ** 2)), f32(4))

    # vmap
    add("vmap_dot", jax.vmap(lambda a, b: a @ b, in_axes=(0, None)), f32(3, 4, 5), f32(5, 2))
    add("vmap_gather", jax.vmap(lambda x, i: x[i]), f32(4, 7), i32(7, 4))
    add("vmap_cond", jax.vmap(lambda p, x: lax.cond(p > 0, jnp.sin, jnp.cos, x)), i32(2, 4) - 0,
        f32(4, 3))
    add("vmap_sort", jax.vmap(jnp.sort, in_axes=1, out_axes=1), f32(6, 3))
    add("vmap_scan", jax.vmap(lambda xs: lax.scan(lambda c, x: (c * x + 1, c), 1.0, xs)[0]),
        f32(4, 6))

    # linalg-ish (XLA:CPU emits custom calls for some)
    add("cholesky", lambda a: jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(4)), f32(4, 4))
    add("triangular_solve", lambda a, b: jax.scipy.linalg.solve_triangular(
        jnp.tril(a) + 3 * jnp.eye(4), b, lower=True), f32(4, 4), f32(4, 2))
    add("clz_bitcast", lambda x: (lax.bitcast_convert_type(x, jnp.int32) >> 23) & 255, f32(8))
    add("bitcast_u8", lambda x: lax.bitcast_convert_type(x, jnp.uint8), f32(3))
    add("erf_inv_lgamma", lambda x: (lax.erf_inv(jnp.tanh(x)), lax.lgamma(jnp.abs(x) + 0.5),
                                     lax.digamma(jnp.abs(x) + 0.5)), f32(7))
    add("integer_pow", lambda x: (x ** 3, x ** -2, lax.integer_pow(x, 7)), f32(6) + 2)
    add("pow_int", lambda a: a ** 3, i32(9, 6))
    add("stop_gradient_mix", lambda x: jnp.sum(x * lax.stop_gradient(x)) + x[0], f32(5))
    add("big_fusion", lambda x: jnp.sum(jax.nn.relu(x.reshape(8, 32) @ x.reshape(32, 8)).T *
                                        2, axis=0) + x[:8], f32(256))
    add("col_reduce_layout", lambda x: jnp.sum(x.T, axis=1) + jnp.max(x, axis=0), f32(64, 33))
    add("copy_transpose_out", lambda x: (x.T, x.T * 2, jnp.swapaxes(x[None], 0, 2)), f32(5, 9))
    # more linear algebra (LAPACK custom calls on XLA:CPU)
    spd = f32(3, 4, 4)
    add("cholesky_batched", lambda a: jnp.linalg.cholesky(a @ jnp.swapaxes(a, -1, -2) + 4 *
                                                          jnp.eye(4)), spd)
    add("cholesky_not_pd", lambda a: jnp.linalg.cholesky(a - 10 * jnp.eye(4)), f32(4, 4))
    add("solve_tri_upper_t", lambda a, b: jax.scipy.linalg.solve_triangular(
        jnp.triu(a) + 4 * jnp.eye(5), b, lower=False, trans=1, unit_diagonal=False),
        f32(5, 5), f32(5, 3))
    add("solve_tri_right", lambda a, b: lax.linalg.triangular_solve(
        jnp.tril(a) + 4 * jnp.eye(4), b, left_side=False, lower=True, unit_diagonal=True),
        f32(4, 4), f32(3, 4))
    add("lu", lambda a: jax.scipy.linalg.lu_factor(a), f32(5, 5))
    add("qr", lambda a: jnp.linalg.qr(a), f32(5, 3))
    add("eigh", lambda a: jnp.linalg.eigh(a + a.T)[0], f32(4, 4))
    add("svd", lambda a: jnp.linalg.svd(a, compute_uv=False), f32(5, 3))
    add("solve", lambda a, b: jnp.linalg.solve(a + 5 * jnp.eye(4), b), f32(4, 4), f32(4, 2))
    add("det_inv", lambda a: (jnp.linalg.det(a), jnp.linalg.inv(a + 5 * jnp.eye(4))),
        f32(4, 4))

    # more XLA rewrites
    add("maxpool_grad", jax.grad(lambda x: jnp.sum(lax.reduce_window(
        x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 2)), f32(1, 4, 6, 2))
    add("conv_grouped_grad_w", jax.grad(lambda w, x: jnp.sum(lax.conv_general_dilated(
        x, w, (1,), "SAME", feature_group_count=2,
        dimension_numbers=("NWC", "WIO", "NWC")) ** 2)), f32(3, 2, 4), f32(2, 9, 4))
    add("dot_f16", lambda a, b: a.astype(jnp.float16) @ b.astype(jnp.float16), f32(6, 8),
        f32(8, 5))
    add("dot_complex", lambda a, b: lax.complex(a, b) @ lax.complex(b, a).T, f32(3, 4),
        f32(3, 4))
    add("fft_roundtrip", lambda x: (jnp.fft.rfft(x).real, jnp.fft.ifft(jnp.fft.fft(x)).real),
        f32(4, 16))
    add("int_div_zero", lambda a, b: (a // b, a % b, lax.div(a, b), lax.rem(a, b)),
        np.array([7, -7, 5, 0, -3, 2**31 - 1], np.int32),
        np.array([0, 2, -2, 0, 3, -1], np.int32))
    add("shift_big", lambda a, s: (a << s, a >> s, lax.shift_right_logical(a, s)),
        np.array([1, -8, 255, -1], np.int32), np.array([0, 31, 32, 40], np.int32))
    add("cumsum_reverse", lambda x: (lax.cumsum(x, axis=1, reverse=True), lax.cummin(
        x, axis=0, reverse=True)), f32(4, 7))
    add("argsort_ties", lambda a: (jnp.argsort(a, stable=True), jnp.argsort(-a, stable=True)),
        np.array([3, 1, 3, 1, 2, 3, 0, 1], np.int32))
    add("top_k_ties_nan", lambda x: lax.top_k(x.at[3].set(jnp.nan).at[7].set(x[1]), 4),
        f32(12))
    add("empty_arrays", lambda x: (jnp.sum(x[:, :0], axis=1), x[:0] * 2, jnp.max(x[:, :0],
                                                                             initial=-1.0,
                                                                             axis=1)),
        f32(3, 4))
    add("rev_pad_neg", lambda x: (jnp.flip(x, (0, 1)), lax.pad(x, 0.0, [(-1, 2, 0),
                                                                      (2, -1, 1)])),
        f32(4, 5))
    add("while_dyn_slice", lambda x: lax.fori_loop(0, 4, lambda i, c: lax.dynamic_update_slice(
        c, lax.dynamic_slice(c, (i,), (2,)) * 2, (i + 1,)), x), f32(8))
    add("scan_unrolled", lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.zeros(3), xs,
                                             unroll=3), f32(7, 3))
    add("expm1_log1p_f16", lambda x: (jnp.expm1(x.astype(jnp.float16)), jnp.log1p(
        jnp.abs(x).astype(jnp.float16))), f32(10))
    add("bf16_reduce", lambda x: (jnp.sum(x.astype(jnp.bfloat16), axis=0), jnp.max(
        x.astype(jnp.bfloat16), axis=1)), f32(40, 6))
    add("f64_reduce_dot", lambda a, b: (jnp.sum(a * a, axis=0), a.T @ b),
        rng.standard_normal((20, 4)), rng.standard_normal((20, 3)), x64=True)
    add("c128", lambda x: jnp.exp(1j * x) @ jnp.cos(x).astype(jnp.complex128),
        rng.standard_normal((3, 3)), x64=True)
    add("u64_bits", lambda k: jax.random.bits(jax.random.wrap_key_data(k), (5,), jnp.uint64),
        key, x64=True)
    add("random_multi", lambda k: (jax.random.randint(jax.random.wrap_key_data(k), (6,), 0, 9),
                                   jax.random.bernoulli(jax.random.wrap_key_data(k), 0.3,
                                                        (8,)),
                                   jax.random.truncated_normal(jax.random.wrap_key_data(k),
                                                               -1.0, 1.0, (4,))), key)
    add("vmap_matmul_grad", jax.vmap(jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w))),
                                     in_axes=(None, 0)), f32(4, 3), f32(5, 2, 4))
    add("transposes_3d", lambda x: (jnp.transpose(x, (1, 2, 0)) + 1, jnp.transpose(
        x, (2, 1, 0)).reshape(-1, 3), jnp.einsum("ijk->kji", x) * x.transpose(2, 1, 0)),
        f32(3, 4, 5))
    # numpy-API long tail
    add("take_modes", lambda x, i: (jnp.take(x, i, mode="clip"), jnp.take(x, i, mode="fill",
                                                                        fill_value=-1.0),
                                    jnp.take(x, i, mode="wrap")), f32(6),
        np.array([-8, -1, 0, 5, 6, 13], np.int32))
    add("segment_sum", lambda x, s: jax.ops.segment_sum(x, s, num_segments=4), f32(9, 2),
        np.array([0, 0, 1, 3, 3, 3, 2, 0, 1], np.int32))
    add("unique_size", lambda a: jnp.unique(a, size=6, fill_value=-1), i32(5, 10))
    add("nonzero_size", lambda a: jnp.nonzero(a > 2, size=5, fill_value=0)[0], i32(5, 9))
    add("searchsorted", lambda s, v: (jnp.searchsorted(s, v), jnp.searchsorted(
        s, v, side="right", method="compare_all"), jnp.searchsorted(s, v, method="sort")),
        np.sort(f32(10)), f32(7))
    add("histogram_interp", lambda x: (jnp.histogram(x, bins=5, range=(-2, 2))[0],
                                       jnp.interp(x, jnp.linspace(-2, 2, 5),
                                                  jnp.arange(5.0) ** 2)), f32(30))
    add("diag_trace_einsum", lambda x: (jnp.einsum("ii->i", x), jnp.trace(x), jnp.einsum(
        "ij,ij->", x, x), jnp.diag(jnp.diag(x)), jnp.tril(x, -1)), f32(5, 5))
    add("roll_tile_repeat", lambda x, s: (jnp.roll(x, s, axis=1), jnp.tile(x, (2, 1)),
                                          jnp.repeat(x, 2, axis=0),
                                          jnp.repeat(x[0], jnp.array([1, 0, 2, 1]),
                                                     total_repeat_length=6)),
        f32(3, 4), np.int32(3))
    add("special_fns", lambda x: (jax.scipy.special.gammaln(jnp.abs(x) + 0.1), jnp.cbrt(x),
                                  jax.scipy.special.ndtri(jax.nn.sigmoid(x)),
                                  jax.scipy.special.i0e(x), lax.igamma(2.0, jnp.abs(x))),
        f32(8))
    add("sort_complex_bool", lambda z, b: (jnp.sort(z), jnp.sort(b), jnp.argmax(b)),
        (f32(6) + 1j * f32(6)).astype(np.complex64), np.array([1, 0, 1, 1, 0], bool))
    add("sort_two_keys", lambda a, b, v: lax.sort((a, b, v), num_keys=2), i32(3, 12),
        i32(3, 12), f32(12))
    add("int8_dot", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.int32),
        i32(7, 4, 6).astype(np.int8) - 3, i32(7, 6, 5).astype(np.int8) - 3)
    add("bf16_dot_f32_acc", lambda a, b: lax.dot(a.astype(jnp.bfloat16), b.astype(
        jnp.bfloat16), preferred_element_type=jnp.float32), f32(8, 32), f32(32, 4))
    add("conv_transpose", lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME",
                                                           dimension_numbers=("NHWC", "HWIO",
                                                                              "NHWC")),
        f32(1, 4, 4, 2), f32(3, 3, 2, 3))
    add("conv3d", lambda x, w: lax.conv_general_dilated(x, w, (1, 1, 1), "SAME"),
        f32(1, 2, 4, 4, 4), f32(3, 2, 2, 2, 2))
    add("conv_f16", lambda x, w: lax.conv_general_dilated(x.astype(jnp.float16), w.astype(
        jnp.float16), (1, 1), "VALID"), f32(1, 2, 6, 6), f32(2, 2, 3, 3))
    add("reduce_window_dilated", lambda x: lax.reduce_window(
        x, 0.0, lax.add, (2, 3), (1, 2), [(1, 1), (2, 0)], base_dilation=(1, 2),
        window_dilation=(2, 1)), f32(6, 7))
    add("variadic_reduce", lambda x, y: lax.reduce((x, y), (0.0, 1.0), lambda a, b: (
        a[0] + b[0], a[1] * b[1]), (1,)), f32(4, 5), f32(4, 5))
    add("fft3d", lambda x: jnp.abs(jnp.fft.fftn(x)), f32(3, 4, 5))
    add("nested_scan", lambda xs: lax.scan(lambda c, row: (c + lax.scan(
        lambda d, v: (d * v + 1, d), 0.0, row)[0], c), 0.0, xs), f32(4, 5))
    add("grad_fori_static", jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * x,
                                                            x).sum()), f32(4))
    add("jacfwd_jacrev", lambda x: (jax.jacfwd(jnp.tanh)(x), jax.jacrev(lambda v: v ** 3 @ v)(
        x)), f32(4))
    add("while_mixed_state", lambda n, x: lax.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5, c[2] | (c[1] > 3).any()),
        (0, x, False)), np.int32(5), f32(3))
    add("cond_multi_out", lambda p, x, y: lax.cond(p, lambda a, b: (a + b, a * 2),
                                                   lambda a, b: (a - b, b * 3), x, y),
        np.bool_(True), f32(3), f32(3))
    add("checkpoint_grad", jax.grad(jax.checkpoint(lambda x: jnp.sum(jnp.sin(jnp.sin(x))))),
        f32(6))
    add("slogdet_pinv", lambda a: (jnp.linalg.slogdet(a), jnp.linalg.pinv(a)), f32(4, 4))
    add("eig", lambda a: jnp.abs(jnp.linalg.eigvals(a)), f32(3, 3))
    add("donated", lambda x, y: x * 2 + y, f32(4, 4), f32(4, 4))
    add("random_gamma_choice", lambda k: (jax.random.gamma(jax.random.wrap_key_data(k), 2.0,
                                                           (4,)),
                                          jax.random.choice(jax.random.wrap_key_data(k), 10,
                                                            (3,), replace=False)), key)
    add("clamp_select_n", lambda x, i: (lax.clamp(-0.5, x, 0.5), lax.select_n(i, x, -x, x * 2)),
        f32(6), np.array([0, 1, 2, 0, 1, 2], np.int32))
    add("cumsum_bool_dtype", lambda b: (jnp.cumsum(b), jnp.cumsum(b, dtype=jnp.float32)),
        np.array([1, 0, 1, 1, 0, 1], bool))
    add("norms", lambda x: (jnp.linalg.norm(x), jnp.linalg.norm(x, axis=0, ord=1),
                            jnp.linalg.norm(x, ord="fro")), f32(4, 3))
    add("polyval_cross", lambda p, a, b: (jnp.polyval(p, a), jnp.cross(a[:3], b[:3])),
        f32(4), f32(5), f32(5))
    return P
