"""xstream: a replicated Redis Streams service.

Subpackages live in the repository's top-level folders: `xstream.engine` is `engine/`.
"""

__version__ = "0.1.0"
