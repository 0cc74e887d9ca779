"""xstream: a replicated Redis Streams service.

Subpackages live in the repository's top-level folders: `xstream.engine` is `engine/`.
builds.py is imported first: it chooses the compiled or the pure build of each compiled
group (the engine, the RESP codec) when that group's package is first imported.
"""

from . import builds as builds  # first: before any subpackage is imported

__version__ = "0.1.0"
