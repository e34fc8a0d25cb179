"""minijax.example_libraries: JAX's small reference libraries `optimizers` and `stax`."""

from minijax.example_libraries import optimizers, stax

__all__ = ["optimizers", "stax"]
