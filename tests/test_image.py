"""minijax.image (jax.image) against JAX 0.10.2: resize with every method (up- and
downscaling, with and without antialiasing) and scale_and_translate, JAX's values
hard-coded; gradients against finite differences; dtype rules."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.image import ResizeMethod, resize, scale_and_translate

IMG = np.array([[0.0, 1.0, 0.5], [2.0, -1.0, 3.0]], np.float32)
BIG = np.arange(24, dtype=np.float32).reshape(4, 6) % 5
SCALE, SHIFT = np.array([1.7, 0.6], np.float32), np.array([0.3, -0.8], np.float32)

# name -> (call, JAX 0.10.2's result, flattened, rounded to 6 digits)
JAX_VALUES = {
    'up_nearest': ("resize(IMG, (3, 5), 'nearest')",
        [0.0, 0.0, 1.0, 0.5, 0.5, 2.0, 2.0, -1.0, 3.0, 3.0, 2.0, 2.0, -1.0, 3.0, 3.0]),
    'down_nearest': ("resize(BIG, (2, 4), 'nearest')",
        [1.0, 3.0, 4.0, 1.0, 3.0, 0.0, 1.0, 3.0]),
    'up_linear': ("resize(IMG, (3, 5), 'linear')",
        [0.0, 0.4, 1.0, 0.7, 0.5, 1.0, 0.6, 0.0, 1.05, 1.75, 2.0, 0.8, -1.0, 1.400001, 3.0]),
    'down_linear': ("resize(BIG, (2, 4), 'linear')",
        [1.089286, 2.412699, 2.587302, 1.142857, 2.660715, 2.396826, 1.222222, 1.910715]),
    'down_noaa_linear': ("resize(BIG, (2, 4), 'linear', antialias=False)",
        [0.75, 2.25, 3.125, 0.875, 2.75, 2.375, 0.75, 2.25]),
    'up_cubic': ("resize(IMG, (3, 5), 'cubic')",
        [-0.226911, 0.347113, 1.131579, 0.671298, 0.275447, 1.075472, 0.570895, 0.0, 1.091418,
         1.882076, 2.377856, 0.794678, -1.131579, 1.511539, 3.488705]),
    'down_cubic': ("resize(BIG, (2, 4), 'cubic')",
        [0.870623, 2.486983, 2.821903, 0.973013, 2.831134, 2.513916, 0.920798, 2.013466]),
    'down_noaa_cubic': ("resize(BIG, (2, 4), 'cubic', antialias=False)",
        [0.579648, 2.141085, 3.500919, 0.688278, 2.814084, 2.414982, 0.417739, 2.426793]),
    'up_lanczos3': ("resize(IMG, (3, 5), 'lanczos3')",
        [-0.444678, 0.352126, 1.248298, 0.691075, 0.026237, 1.165345, 0.491833, -0.0, 1.072323,
         1.971844, 2.775369, 0.63154, -1.248298, 1.453572, 3.917451]),
    'down_lanczos3': ("resize(BIG, (2, 4), 'lanczos3')",
        [0.734365, 2.591663, 2.902598, 0.852051, 2.934813, 2.60065, 0.762085, 2.037928]),
    'down_noaa_lanczos3': ("resize(BIG, (2, 4), 'lanczos3', antialias=False)",
        [0.524227, 1.927534, 3.7752, 0.598536, 2.903567, 2.535111, 0.266877, 2.558876]),
    'up_lanczos5': ("resize(IMG, (3, 5), 'lanczos5')",
        [-0.536451, 0.365701, 1.300546, 0.721942, -0.10127, 1.219369, 0.434849, -0.0, 1.063713,
         1.987583, 2.97519, 0.503998, -1.300547, 1.405484, 4.076436]),
    'down_lanczos5': ("resize(BIG, (2, 4), 'lanczos5')",
        [0.687222, 2.622831, 2.928589, 0.804028, 2.94749, 2.658852, 0.678104, 2.084543]),
    'down_noaa_lanczos5': ("resize(BIG, (2, 4), 'lanczos5', antialias=False)",
        [0.660913, 1.824794, 3.966476, 0.616451, 2.796468, 2.555157, 0.280239, 2.574962]),
    'st_linear': ("scale_and_translate(BIG, (5, 3), (0, 1), SCALE, SHIFT, 'linear')",
        [1.75, 3.25, 1.142857, 1.955883, 3.069853, 1.054622, 2.544118, 2.555147, 0.802521,
         2.893383, 1.801471, 1.096639, 3.113971, 0.919118, 1.684874]),
    'st_cubic': ("scale_and_translate(BIG, (5, 3), (0, 1), SCALE, SHIFT, 'cubic')",
        [1.468765, 3.512137, 1.16048, 1.777102, 3.266418, 0.990116, 2.576513, 2.638108, 0.53797,
         3.160693, 1.658929, 0.866903, 3.33957, 0.695375, 1.721249]),
    'st_lanczos3': ("scale_and_translate(BIG, (5, 3), (0, 1), SCALE, SHIFT, 'lanczos3')",
        [1.281387, 3.603625, 1.30561, 1.714564, 3.382604, 0.918843, 2.577007, 2.736652, 0.385975,
         3.505163, 1.517362, 0.584832, 3.389, 0.667922, 1.705519]),
}


@pytest.mark.parametrize("name", sorted(JAX_VALUES))
def test_matches_jax(name):
    call, want = JAX_VALUES[name]
    env = {"resize": resize, "scale_and_translate": scale_and_translate, "IMG": IMG,
           "BIG": BIG, "SCALE": SCALE, "SHIFT": SHIFT}
    got = eval(call, env)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.ravel(got), want, rtol=1e-5, atol=2e-6)


def test_method_names_and_errors():
    assert ResizeMethod.from_string("bilinear") is ResizeMethod.LINEAR
    assert ResizeMethod.from_string("bicubic") is ResizeMethod.CUBIC
    with pytest.raises(ValueError, match="Unknown resize method"):
        resize(IMG, (3, 3), "sinc")
    with pytest.raises(ValueError, match="one entry per dimension"):
        resize(IMG, (3,), "linear")
    with pytest.raises(ValueError, match="nearest"):
        scale_and_translate(IMG, (3, 3), (0, 1), [1.0, 1.0], [0.0, 0.0], "nearest")


def test_dtypes_follow_jax():
    ints = jnp.arange(12, dtype=jnp.uint8).reshape(3, 4)
    assert resize(ints, (5, 6), "linear").dtype == jnp.float32  # JAX: float result
    assert resize(ints, (5, 6), "nearest").dtype == jnp.uint8
    assert resize(IMG.astype(np.float16), (3, 5), "cubic").dtype == jnp.float16
    # JAX 0.10.2: resize(arange(12, uint8).reshape(3, 4), (5, 6), 'linear')[1, :3]
    np.testing.assert_allclose(resize(ints, (5, 6), "linear")[1, :3],
                               [1.6000001, 2.1000001, 2.766667], rtol=1e-6)


def test_jit_and_vmap_agree_with_eager():
    want = resize(BIG, (3, 9), "lanczos3")
    np.testing.assert_allclose(minijax.jit(lambda x: resize(x, (3, 9), "lanczos3"))(BIG),
                               want, rtol=1e-6, atol=1e-6)
    batched = minijax.vmap(lambda x: resize(x, (3, 9), "lanczos3"))(np.stack([BIG, BIG]))
    np.testing.assert_allclose(batched[1], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos5"])
def test_gradient_matches_finite_differences(method):
    def f(x):
        return jnp.sum(jnp.sin(resize(x, (3, 4), method)))

    x = BIG.astype(np.float64) / 5
    g = np.asarray(minijax.grad(lambda v: f(v.astype(jnp.float32)))(x.astype(np.float32)))
    eps = 1e-3
    for i, j in [(0, 0), (1, 3), (3, 5)]:
        dx = np.zeros_like(x)
        dx[i, j] = eps
        fd = (float(f(jnp.asarray(x + dx, jnp.float32))) -
              float(f(jnp.asarray(x - dx, jnp.float32)))) / (2 * eps)
        assert abs(g[i, j] - fd) < 2e-3, (i, j, g[i, j], fd)
