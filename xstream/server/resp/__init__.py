"""The RESP edge: Redis's wire protocol (codec.py: RESP2/RESP3 encoding and parsing).

native.py is imported first: it chooses the compiled or the pure build of codec.py and
requests.py before either is imported (XSTREAM_ENGINE, as for the engine)."""

from . import native as native  # first: the build of codec.py and requests.py
