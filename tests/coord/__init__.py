"""Coordinator tier: xstream.coord against a real etcd started on free loopback ports."""
