"""The module that ``import jaxlib`` gives under :mod:`minijax.compat`'s hook: minijax has no
separate native library, so this only reports the version that libraries check."""

from minijax.compat.versions import JAXLIB_API_VERSION, version_info

__version__ = JAXLIB_API_VERSION
version = JAXLIB_API_VERSION
__version_info__ = version_info(JAXLIB_API_VERSION)
