"""minijax.numpy (in progress)."""
