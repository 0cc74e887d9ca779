"""The RESP edge: Redis's wire protocol (codec.py: RESP2/RESP3 encoding and parsing)."""
