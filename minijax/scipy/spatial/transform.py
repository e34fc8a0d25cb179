"""minijax.scipy.spatial.transform (JAX's ``jax.scipy.spatial.transform``): ``Rotation``
and ``Slerp``.

A ``Rotation`` holds unit quaternions in scalar-last order ``(x, y, z, w)``, one (shape
``(4,)``, a *single* rotation) or a stack (``(N, 4)``). Both classes are NamedTuples, hence
pytrees: they pass through jit, vmap and grad. Conversions follow scipy (Shepperd's method
for matrices, the quaternion-based Euler angle extraction of Bernardes and Viollet with
scipy's gimbal-lock conventions, small-angle series for rotation vectors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from minijax import numpy as jnp
from minijax import random as jrandom

__all__ = ["Rotation", "Slerp"]

_AXES = "xyz"


def _as_float(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(x, 1.0))
    return x


def _check_last(x, n, what):
    if x.ndim not in (1, 2) or x.shape[-1] != n:
        raise ValueError(f"Expected `{what}` to have shape ({n},) or (N, {n}), got "
                         f"{x.shape}.")


def _quat_multiply(p, q):
    """The Hamilton product p q (scalar last): rotate by q, then by p."""
    pv, pw = p[..., :3], p[..., 3:]
    qv, qw = q[..., :3], q[..., 3:]
    w = pw * qw - jnp.sum(pv * qv, axis=-1, keepdims=True)
    v = pw * qv + qw * pv + jnp.cross(pv, qv)
    return jnp.concatenate([v, w], axis=-1)


def _elementary_quat(axis: int, angle):
    half = 0.5 * angle
    parts = [jnp.zeros_like(half)] * 3
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts + [jnp.cos(half)], axis=-1)


def _canonical(q):
    """q or -q, whichever has w > 0 (ties broken by the first non-zero of x, y, z)."""
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    flip = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
    return jnp.where(flip[..., None], -q, q)


class Rotation(NamedTuple):
    """Rotations in 3 dimensions, stored as unit quaternions ``quat`` (scalar last)."""

    quat: jnp.ndarray

    # construction -----------------------------------------------------------------------
    @classmethod
    def from_quat(cls, quat):
        """From quaternions ``(x, y, z, w)``, normalized."""
        quat = _as_float(quat)
        _check_last(quat, 4, "quat")
        return cls(quat / jnp.linalg.norm(quat, axis=-1, keepdims=True))

    @classmethod
    def from_matrix(cls, matrix):
        """From rotation matrices (``(3, 3)`` or ``(N, 3, 3)``), by Shepperd's method."""
        m = _as_float(matrix)
        if m.ndim not in (2, 3) or m.shape[-2:] != (3, 3):
            raise ValueError(f"Expected `matrix` to have shape (3, 3) or (N, 3, 3), got "
                             f"{m.shape}")
        d0, d1, d2 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
        trace = d0 + d1 + d2
        # one candidate quaternion per largest of (d0, d1, d2, trace)
        cands = [
            jnp.stack([1 + 2 * d0 - trace, m[..., 1, 0] + m[..., 0, 1],
                       m[..., 2, 0] + m[..., 0, 2], m[..., 2, 1] - m[..., 1, 2]], -1),
            jnp.stack([m[..., 1, 0] + m[..., 0, 1], 1 + 2 * d1 - trace,
                       m[..., 2, 1] + m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0]], -1),
            jnp.stack([m[..., 2, 0] + m[..., 0, 2], m[..., 2, 1] + m[..., 1, 2],
                       1 + 2 * d2 - trace, m[..., 1, 0] - m[..., 0, 1]], -1),
            jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                       m[..., 1, 0] - m[..., 0, 1], 1 + trace], -1),
        ]
        choice = jnp.argmax(jnp.stack([d0, d1, d2, trace], -1), axis=-1)
        quat = cands[3]
        for i in range(3):
            quat = jnp.where((choice == i)[..., None], cands[i], quat)
        return cls(quat / jnp.linalg.norm(quat, axis=-1, keepdims=True))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """From rotation vectors (axis times angle)."""
        rotvec = _as_float(rotvec)
        _check_last(rotvec, 3, "rotvec")
        if degrees:
            rotvec = jnp.deg2rad(rotvec)
        angle = jnp.linalg.norm(rotvec, axis=-1, keepdims=True)
        small = angle <= 1e-3
        safe = jnp.where(small, 1.0, angle)
        a2 = angle * angle
        scale = jnp.where(small, 0.5 - a2 / 48 + a2 * a2 / 3840, jnp.sin(safe / 2) / safe)
        return cls(jnp.concatenate([scale * rotvec, jnp.cos(angle / 2)], axis=-1))

    @classmethod
    def from_mrp(cls, mrp):
        """From modified Rodrigues parameters ``axis * tan(angle / 4)``."""
        mrp = _as_float(mrp)
        _check_last(mrp, 3, "mrp")
        s = jnp.sum(mrp * mrp, axis=-1, keepdims=True)
        return cls(jnp.concatenate([2 * mrp, 1 - s], axis=-1) / (1 + s))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """From Euler angles about the axes of ``seq`` (up to three of ``xyz``: extrinsic,
        i.e. fixed axes; or of ``XYZ``: intrinsic, i.e. moving axes)."""
        intrinsic, axes = _parse_seq(seq)
        angles = _as_float(angles)
        single = angles.ndim == 0 or (angles.ndim == 1 and len(axes) > 1)
        angles = jnp.atleast_1d(angles)
        if len(axes) == 1 and angles.ndim == 1 and not single:
            angles = angles[:, None]  # N angles about one axis
        if angles.shape[-1] != len(axes) or angles.ndim > 2:
            raise ValueError(f"Expected angles to have shape ({len(axes)},) or "
                             f"(N, {len(axes)}) for sequence {seq!r}, got {angles.shape}")
        if degrees:
            angles = jnp.deg2rad(angles)
        quat = _elementary_quat(axes[0], angles[..., 0])
        for n in range(1, len(axes)):
            step = _elementary_quat(axes[n], angles[..., n])
            quat = _quat_multiply(quat, step) if intrinsic else _quat_multiply(step, quat)
        if single and quat.ndim == 2:
            quat = quat[0]
        return cls(quat)

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation (``num`` of them, or a single one)."""
        quat = jnp.asarray([0.0, 0.0, 0.0, 1.0], dtype)
        return cls(quat if num is None else jnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Rotations uniformly distributed over SO(3) (normalized Gaussian quaternions)."""
        shape = (4,) if num is None else (num, 4)
        return cls.from_quat(jrandom.normal(random_key, shape))

    @classmethod
    def concatenate(cls, rotations: Sequence):
        """One stack of all the given rotations."""
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    # conversion -------------------------------------------------------------------------
    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """The quaternions, ``(x, y, z, w)`` (or ``(w, x, y, z)`` with ``scalar_first``);
        ``canonical`` picks the sign with ``w >= 0``."""
        quat = _canonical(self.quat) if canonical else self.quat
        if scalar_first:
            quat = jnp.roll(quat, 1, axis=-1)
        return quat

    def as_matrix(self):
        """The rotation matrices, ``(3, 3)`` or ``(N, 3, 3)``."""
        x, y, z, w = (self.quat[..., i] for i in range(4))
        xx, yy, zz, ww = x * x, y * y, z * z, w * w
        xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
        rows = [
            jnp.stack([xx - yy - zz + ww, 2 * (xy - zw), 2 * (xz + yw)], -1),
            jnp.stack([2 * (xy + zw), -xx + yy - zz + ww, 2 * (yz - xw)], -1),
            jnp.stack([2 * (xz - yw), 2 * (yz + xw), -xx - yy + zz + ww], -1),
        ]
        return jnp.stack(rows, -2)

    def as_rotvec(self, degrees: bool = False):
        """Rotation vectors (axis times angle, angle in [0, pi])."""
        quat = jnp.where(self.quat[..., 3:] < 0, -self.quat, self.quat)
        vec = quat[..., :3]
        angle = 2 * jnp.arctan2(jnp.linalg.norm(vec, axis=-1, keepdims=True), quat[..., 3:])
        small = angle <= 1e-3
        safe = jnp.where(small, 1.0, angle)
        a2 = angle * angle
        scale = jnp.where(small, 2 + a2 / 12 + 7 * a2 * a2 / 2880, safe / jnp.sin(safe / 2))
        rotvec = scale * vec
        return jnp.rad2deg(rotvec) if degrees else rotvec

    def as_mrp(self):
        """Modified Rodrigues parameters (of the quaternion with ``w >= 0``)."""
        quat = jnp.where(self.quat[..., 3:] < 0, -self.quat, self.quat)
        return quat[..., :3] / (1 + quat[..., 3:])

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles for ``seq`` (three axes; first and third in [-pi, pi], the second in
        [0, pi] for repeated-axis and [-pi/2, pi/2] for three-axis sequences). At gimbal
        lock the third angle (first, for intrinsic sequences) is set to 0, as scipy does."""
        intrinsic, axes = _parse_seq(seq)
        if len(axes) != 3:
            raise ValueError(f"Expected 3 axes, got {seq!r}.")
        angles = _euler_from_quat(self.quat, axes, not intrinsic)
        return jnp.rad2deg(angles) if degrees else angles

    # operations -------------------------------------------------------------------------
    def apply(self, vectors, inverse: bool = False):
        """Rotate ``vectors`` (``(3,)`` or ``(N, 3)``) by the rotation(s)."""
        vectors = _as_float(vectors)
        _check_last(vectors, 3, "vectors")
        matrix = self.as_matrix()
        if inverse:
            matrix = jnp.swapaxes(matrix, -1, -2)
        return (matrix @ vectors[..., None])[..., 0]

    def inv(self):
        """The inverse rotation(s)."""
        return Rotation(self.quat * jnp.asarray([-1.0, -1.0, -1.0, 1.0], self.quat.dtype))

    def magnitude(self):
        """The rotation angle(s), in [0, pi]."""
        return 2 * jnp.arctan2(jnp.linalg.norm(self.quat[..., :3], axis=-1),
                               jnp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The (weighted) mean rotation: the quaternion maximizing sum w (q . q_i)^2,
        the top eigenvector of sum w q_i q_i^T (Markley et al.)."""
        quat = jnp.atleast_2d(self.quat)
        if weights is None:
            weights = jnp.ones(quat.shape[0], quat.dtype)
        weights = _as_float(weights)
        if weights.ndim != 1 or weights.shape[0] != quat.shape[0]:
            raise ValueError(f"Expected `weights` to have shape ({quat.shape[0]},), got "
                             f"{weights.shape}.")
        k = jnp.einsum("i,ij,ik->jk", weights, quat, quat)
        _, vecs = jnp.linalg.eigh(k)
        return Rotation(vecs[:, -1])

    def __mul__(self, other) -> Rotation:
        """The composition: apply ``other`` first, then ``self``."""
        if not isinstance(other, Rotation):
            return NotImplemented
        return Rotation(_quat_multiply(self.quat, other.quat))

    def __getitem__(self, indexer):
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    @property
    def single(self) -> bool:
        """Whether this holds one rotation rather than a stack."""
        return self.quat.ndim == 1


def _parse_seq(seq: str):
    if not isinstance(seq, str) or not 1 <= len(seq) <= 3:
        raise ValueError(f"Expected axis specification to be a string of 1 to 3 of "
                         f"'xyz' or 'XYZ', got {seq!r}")
    intrinsic = seq.isupper()
    if not (intrinsic or seq.islower()) or any(c not in _AXES for c in seq.lower()):
        raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    lower = seq.lower()
    if any(a == b for a, b in zip(lower, lower[1:])):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return intrinsic, [_AXES.index(c) for c in lower]


def _euler_from_quat(quat, axes, extrinsic: bool):
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    q = [quat[..., n] for n in range(4)]
    if symmetric:
        a, b, c, d = q[3], q[i], q[j], q[k] * sign
    else:
        a, b, c, d = q[3] - q[j], q[i] + q[k] * sign, q[j] + q[3], q[k] * sign - q[i]
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    case1 = jnp.abs(middle) <= eps
    case2 = jnp.abs(middle - math.pi) <= eps
    half_sum = jnp.arctan2(b, a)
    half_diff = jnp.arctan2(d, c)
    regular = ~case1 & ~case2
    locked_first = jnp.where(case1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    first_idx, third_idx = (0, 2) if extrinsic else (2, 0)
    out = [None, middle, None]
    out[first_idx] = jnp.where(regular, half_sum - half_diff, 0.0)
    out[third_idx] = jnp.where(regular, half_sum + half_diff, 0.0)
    # at gimbal lock angles[2] = 0 and angles[0] carries the rotation
    out[0] = jnp.where(regular, out[0], locked_first)
    out[2] = jnp.where(regular, out[2], 0.0)
    if not symmetric:
        out[third_idx] = out[third_idx] * sign
        out[1] = out[1] - math.pi / 2
    angles = jnp.stack(out, -1)
    angles = jnp.where(angles < -math.pi, angles + 2 * math.pi, angles)
    return jnp.where(angles > math.pi, angles - 2 * math.pi, angles)


class Slerp(NamedTuple):
    """Spherical linear interpolation between rotations at increasing ``times``."""

    times: jnp.ndarray
    timedelta: jnp.ndarray
    rotations: Rotation
    rotvecs: jnp.ndarray

    @classmethod
    def init(cls, times, rotations: Rotation):
        """The interpolant through ``rotations`` (a stack) at the 1-d ``times``."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = _as_float(times)
        if times.ndim != 1:
            raise ValueError(f"Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError(f"Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        timedelta = jnp.diff(times)
        rotvecs = (rotations[:-1].inv() * rotations[1:]).as_rotvec()
        return cls(times, timedelta, rotations, rotvecs)

    def __call__(self, times):
        """The interpolated rotation(s) at ``times`` (scalar: a single rotation)."""
        times = _as_float(times)
        single = times.ndim == 0
        times = jnp.atleast_1d(times)
        n = self.times.shape[0]
        idx = jnp.clip(jnp.searchsorted(self.times, times, side="right") - 1, 0, n - 2)
        alpha = (times - self.times[idx]) / self.timedelta[idx]
        result = self.rotations[idx] * Rotation.from_rotvec(self.rotvecs[idx] * alpha[:, None])
        return Rotation(result.quat[0]) if single else result


