"""minijax.scipy.spatial.transform.Rotation and Slerp against scipy.spatial.transform
(conversions both ways, every Euler sequence, gimbal lock, apply/inv/mul/magnitude/mean,
Slerp), JAX's values for random(), pytree use under jit/vmap/grad, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation as SR
from scipy.spatial.transform import Slerp as SSlerp

import minijax
import minijax.numpy as jnp
from minijax.scipy.spatial.transform import Rotation, Slerp
from minijax.test_util import enable_x64

SEQS = ["xyz", "zyx", "xzx", "zxz", "yxy", "xzy", "XYZ", "ZYX", "XZX", "ZXZ", "YZY", "YXZ"]


def canon(q):
    return SR.from_quat(np.asarray(q)).as_quat(canonical=True)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6))
def test_conversions_match_scipy(seed, n):
    rng = np.random.RandomState(seed)
    q = rng.normal(size=(n, 4))
    ref = SR.from_quat(q)
    with enable_x64():
        r = Rotation.from_quat(q)
        np.testing.assert_allclose(r.as_quat(canonical=True), ref.as_quat(canonical=True),
                                   atol=1e-12)
        np.testing.assert_allclose(r.as_quat(scalar_first=True),
                                   np.roll(np.asarray(r.as_quat()), 1, -1), atol=0)
        np.testing.assert_allclose(r.as_matrix(), ref.as_matrix(), atol=1e-12)
        np.testing.assert_allclose(r.as_rotvec(), ref.as_rotvec(), atol=1e-12)
        np.testing.assert_allclose(r.as_rotvec(degrees=True), ref.as_rotvec(degrees=True),
                                   atol=1e-10)
        np.testing.assert_allclose(r.as_mrp(), ref.as_mrp(), atol=1e-12)
        np.testing.assert_allclose(r.magnitude(), ref.magnitude(), atol=1e-12)
        for back in (Rotation.from_matrix(ref.as_matrix()), Rotation.from_rotvec(ref.as_rotvec()),
                     Rotation.from_mrp(ref.as_mrp())):
            np.testing.assert_allclose(back.as_quat(canonical=True), ref.as_quat(canonical=True),
                                       atol=1e-12)
        for seq in SEQS:
            np.testing.assert_allclose(r.as_euler(seq), ref.as_euler(seq), atol=1e-10,
                                       err_msg=seq)
            angles = ref.as_euler(seq)
            np.testing.assert_allclose(canon(Rotation.from_euler(seq, angles).as_quat()),
                                       ref.as_quat(canonical=True), atol=1e-12, err_msg=seq)


def test_small_angles_gimbal_lock_and_partial_sequences(x64):
    tiny = np.array([[1e-9, -2e-9, 3e-10], [1e-4, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(Rotation.from_rotvec(tiny).as_rotvec(), tiny, rtol=1e-12,
                               atol=1e-20)
    locked = SR.from_euler("xyz", [[0.3, np.pi / 2, 0.2], [0.1, 0, 0.4]]).as_quat()
    # JAX 0.10.2 and scipy: the third angle is zeroed at gimbal lock
    np.testing.assert_allclose(Rotation.from_quat(locked).as_euler("xyz"),
                               [[0.1, np.pi / 2, 0], [0.1, 0, 0.4]], atol=1e-12)
    np.testing.assert_allclose(Rotation.from_quat(locked).as_euler("ZXZ"),
                               [[1.47079633, np.pi / 2, -np.pi / 2], [0.4, 0.1, 0]], atol=1e-8)
    # JAX (unlike this scipy) reads N angles for a one-axis sequence as N rotations
    np.testing.assert_allclose(canon(Rotation.from_euler("x", np.array([0.1, 0.2])).as_quat()),
                               SR.from_euler("x", [[0.1], [0.2]]).as_quat(canonical=True),
                               atol=1e-12)
    for seq, angles in (("Z", 0.3), ("xy", [0.1, 0.2]), ("YX", [[0.1, 0.2], [0.3, 0.4]])):
        np.testing.assert_allclose(canon(Rotation.from_euler(seq, np.array(angles)).as_quat()),
                                   SR.from_euler(seq, angles).as_quat(canonical=True),
                                   atol=1e-12)
    np.testing.assert_allclose(Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_quat(),
                               SR.from_euler("xyz", [10, 20, 30], degrees=True).as_quat(),
                               atol=1e-12)


def test_operations_match_scipy(x64):
    rng = np.random.RandomState(1)
    q, v, w = rng.normal(size=(8, 4)), rng.normal(size=(8, 3)), rng.uniform(size=8)
    r, ref = Rotation.from_quat(q), SR.from_quat(q)
    np.testing.assert_allclose(r.apply(v), ref.apply(v), atol=1e-12)
    np.testing.assert_allclose(r.apply(v, inverse=True), ref.apply(v, inverse=True),
                               atol=1e-12)
    np.testing.assert_allclose(r[2].apply(v), ref[2].apply(v), atol=1e-12)
    np.testing.assert_allclose(r.apply(v[0]), ref.apply(v[0]), atol=1e-12)
    np.testing.assert_allclose(canon((r * r[::-1]).as_quat()),
                               (ref * ref[::-1]).as_quat(canonical=True), atol=1e-12)
    np.testing.assert_allclose(canon(r.inv().as_quat()), ref.inv().as_quat(canonical=True),
                               atol=1e-12)
    np.testing.assert_allclose(canon(r.mean(w).as_quat()), ref.mean(w).as_quat(canonical=True),
                               atol=1e-10)
    np.testing.assert_allclose(canon(r.mean().as_quat()), ref.mean().as_quat(canonical=True),
                               atol=1e-10)
    assert len(r) == 8 and r[1:3].quat.shape == (2, 4) and r[0].single and not r.single
    np.testing.assert_array_equal(Rotation.identity(3).as_quat(), [[0, 0, 0, 1]] * 3)
    assert Rotation.identity().as_quat().shape == (4,)
    assert Rotation.concatenate([r[0], r[1:4]]).quat.shape == (4, 4)
    # JAX 0.10.2: Rotation.random(jax.random.PRNGKey(0)).as_quat()
    np.testing.assert_allclose(Rotation.random(minijax.random.PRNGKey(0)).as_quat(),
                               [-0.10302822, -0.39279138, 0.90898867, 0.09401979], atol=1e-7)
    assert Rotation.random(minijax.random.PRNGKey(1), 5).quat.shape == (5, 4)


def test_slerp_matches_scipy(x64):
    rng = np.random.RandomState(2)
    ref = SR.from_quat(rng.normal(size=(4, 4)))
    times = np.array([0.0, 1.0, 3.0, 4.5])
    ours = Slerp.init(times, Rotation.from_quat(ref.as_quat()))
    query = np.array([0.0, 0.3, 1.0, 2.9, 4.5])
    np.testing.assert_allclose(canon(ours(query).as_quat()),
                               SSlerp(times, ref)(query).as_quat(canonical=True), atol=1e-12)
    assert ours(0.5).single
    with pytest.raises(ValueError, match="at least 2"):
        Slerp.init(times[:1], Rotation.from_quat(ref.as_quat()[:1]))
    with pytest.raises(ValueError, match="number of rotations"):
        Slerp.init(times[:3], Rotation.from_quat(ref.as_quat()))


def test_pytree_jit_vmap_grad_and_errors():
    q = jnp.asarray(np.random.RandomState(3).normal(size=(5, 4)).astype(np.float32))
    r = Rotation.from_quat(q)
    np.testing.assert_allclose(minijax.jit(lambda rot: rot.as_matrix())(r), r.as_matrix(),
                               atol=1e-6)
    rv = minijax.vmap(lambda x: Rotation.from_quat(x).as_rotvec())(q)
    np.testing.assert_allclose(rv, SR.from_quat(np.asarray(q, np.float64)).as_rotvec(),
                               atol=1e-5)
    # R_z(a) e_x = (cos a, sin a, 0): the derivative of its y component is cos a
    g = minijax.grad(lambda a: Rotation.from_euler("z", a).apply(jnp.array([1.0, 0, 0]))[1])(
        0.3)
    np.testing.assert_allclose(g, np.cos(0.3), rtol=1e-5)
    with pytest.raises(TypeError, match="not subscriptable"):
        r[0][0]
    with pytest.raises(TypeError, match="len"):
        len(r[0])
    with pytest.raises(ValueError, match="shape"):
        Rotation.from_quat(jnp.ones(3))
    with pytest.raises(ValueError, match="axes"):
        r.as_euler("xxy")
    with pytest.raises(ValueError, match="to be from"):
        Rotation.from_euler("xYz", [0.1, 0.2, 0.3])
