"""minijax.scipy.linalg: jax.scipy.linalg's factorizations, solvers, matrix functions and
structured matrices, with SciPy's signatures."""

from minijax.scipy.linalg.decompositions import (
    cho_factor,
    cho_solve,
    cholesky,
    det,
    eigh,
    eigh_tridiagonal,
    inv,
    lu,
    lu_factor,
    lu_solve,
    qr,
    solve,
    solve_triangular,
    svd,
)
from minijax.scipy.linalg.matrix_functions import expm, expm_frechet, polar
from minijax.scipy.linalg.special_matrices import (
    block_diag,
    circulant,
    companion,
    hankel,
    hilbert,
    leslie,
    pascal,
    toeplitz,
)

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
           "det", "eigh", "eigh_tridiagonal", "expm", "expm_frechet", "hankel", "hilbert",
           "inv", "leslie", "lu", "lu_factor", "lu_solve", "pascal", "polar", "qr", "solve",
           "solve_triangular", "svd", "toeplitz"]
