"""Coordinator for automatic failover: a pure resolver and its etcd I/O.

`resolver` decides (no I/O, no clock); `etcd` talks to etcd's v3 JSON gateway (leader key,
leases, node status keys). A node's coordinator loop reads with `etcd.Election`, decides with
`resolver.decide`, and carries out the actions.
"""
