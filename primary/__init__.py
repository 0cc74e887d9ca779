"""The primary: the single writer that logs, persists and ships every write (xstream.primary)."""
