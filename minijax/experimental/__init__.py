"""Experimental APIs, imported by name as in JAX (`from minijax.experimental import
multihost_utils`)."""
