"""The RESP edge: Redis's wire protocol (codec.py: RESP2/RESP3 encoding and parsing).

codec.py and requests.py are compiled with mypyc as the engine is; xstream/builds.py chooses
their build (RESP_CODEC) when this package is first imported (XSTREAM_ENGINE, as for the
engine)."""
