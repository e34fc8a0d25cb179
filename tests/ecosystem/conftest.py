"""Ecosystem tests: published JAX libraries run unchanged on minijax through the import
hook, compared with the same programs' results recorded from real JAX (fixtures/)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
