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
from minijax.scipy.linalg.reductions import hessenberg, qr_multiply, solve_sylvester
from minijax.scipy.linalg.schur_functions import funm, rsf2csf, schur, sqrtm
from minijax.scipy.linalg.special_matrices import (
    block_diag,
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    toeplitz,
)

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
           "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm",
           "expm_frechet", "fiedler", "hadamard", "hankel", "helmert", "hilbert", "inv",
           "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve", "pascal",
           "polar", "qr", "solve", "solve_triangular", "svd", "toeplitz",
           "fiedler_companion", "funm", "hessenberg", "qr_multiply", "rsf2csf", "schur",
           "solve_sylvester", "sqrtm"]
