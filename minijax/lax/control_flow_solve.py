"""Implicitly differentiated solvers (jax.lax.custom_root, jax.lax.custom_linear_solve).

Both run the user's solver without differentiating through it (its iterations may be a
while_loop) and differentiate the solution by the implicit function theorem:

- custom_root: x*(theta) with f(x*, theta) = 0 has dx* = -(df/dx)^-1 df/dtheta dtheta. It is
  written as x* - (c - stop_gradient(c)) with c = tangent_solve(df/dx at x*, f(x*, theta)):
  the value is exactly x*, and since f(x*) = 0 the derivative of c is the IFT term, in
  forward and reverse mode alike (tangent_solve must be differentiable in its right-hand
  side, as a linear solve is). The derivative with respect to initial_guess is zero.
- custom_linear_solve: x = A^-1 b with A = matvec (which may close over theta); a
  custom_vjp gives ct_b = A^-T ct_x (transpose_solve, or solve when symmetric) and
  ct_theta = -(d(A x)/dtheta)^T ct_b.
"""

from __future__ import annotations

from minijax import tree_util
from minijax.api import jvp, vjp
from minijax.custom_derivatives import closure_convert, custom_vjp
from minijax.lax.elementwise import neg, sub
from minijax.lax.stop_gradient import stop_gradient
from minijax.lax.structural import zeros_like_array as zeros_like


def _tree_sub(a, b):
    return tree_util.tree_map(sub, a, b)


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """Find a root of `f` with `solve(f, initial_guess)`, differentiated implicitly.

    `tangent_solve(g, y)` solves the linear system g(x) = y for the linear function g (the
    Jacobian of f at the root, e.g. `lambda g, y: y / g(1.0)` for scalars). With `has_aux`,
    `solve` returns `(root, aux)` and aux is returned undifferentiated.
    """
    converted, consts = closure_convert(f, initial_guess)
    frozen = [stop_gradient(c) for c in consts]

    def f_frozen(x):
        return converted(x, *frozen)

    out = solve(f_frozen, stop_gradient(initial_guess))
    root, aux = out if has_aux else (out, None)
    root = stop_gradient(root)
    residual = converted(root, *consts)  # zero in value; its derivative is df/dtheta

    def jac(z):
        return jvp(f_frozen, (root,), (z,))[1]

    corr = tangent_solve(jac, residual)
    root = _tree_sub(root, _tree_sub(corr, stop_gradient(corr)))
    return (root, stop_gradient(aux)) if has_aux else root


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """Solve the linear system matvec(x) = b with `solve(matvec, b)`, differentiated
    implicitly: reverse mode solves the transposed system with `transpose_solve(vecmat,
    ct)` (or with `solve` when `symmetric`), never differentiating through `solve`.

    As in JAX, only `b` and the values `matvec` closes over are differentiated; what
    `solve` / `transpose_solve` close over besides `matvec` is treated as constant.
    """
    converted, consts = closure_convert(matvec, b)
    frozen = [stop_gradient(c) for c in consts]

    def mv_frozen(x):
        return converted(x, *frozen)

    solve_c, s_consts = closure_convert(lambda r: solve(mv_frozen, r), b)
    if transpose_solve is not None:
        _, vecmat_vjp = vjp(mv_frozen, tree_util.tree_map(zeros_like, b))
        t_c, t_consts = closure_convert(
            lambda r: transpose_solve(lambda y: vecmat_vjp(y)[0], r), b)
    elif symmetric:
        t_c, t_consts = solve_c, s_consts
    else:
        t_c, t_consts = None, []

    def run(rhs, ss):
        out = solve_c(rhs, *ss)
        return out if has_aux else (out, None)

    @custom_vjp
    def linear_solve(rhs, cs, ss, ts):
        return run(rhs, ss)

    def fwd(rhs, cs, ss, ts):
        x, aux = run(rhs, ss)
        return (x, aux), (x, cs, ss, ts)

    def bwd(res, cts):
        x, cs, ss, ts = res
        if t_c is None:
            raise TypeError("custom_linear_solve: reverse-mode differentiation needs "
                            "transpose_solve (or symmetric=True)")
        ct_b = t_c(cts[0], *ts)
        if has_aux:
            ct_b = ct_b[0]
        _, consts_vjp = vjp(lambda *c: converted(x, *c), *cs)
        ct_cs = [tree_util.tree_map(neg, c) for c in consts_vjp(ct_b)]
        zeros = tree_util.tree_map(zeros_like, (ss, ts))
        return (ct_b, ct_cs) + zeros

    linear_solve.defvjp(fwd, bwd)
    x, aux = linear_solve(b, list(consts), [stop_gradient(c) for c in s_consts],
                          [stop_gradient(c) for c in t_consts])
    return (x, aux) if has_aux else x
