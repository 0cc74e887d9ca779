"""Drills: xstream nodes in containers (built by scripts/images.sh), faults injected with
verbs (harness.py: kill, pause, partition, heal) and outcomes awaited with bounded polls."""
