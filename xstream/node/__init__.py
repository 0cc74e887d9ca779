"""The node's lower floor: what every role stands on.

    records, store, damage     the replication stream's bytes, on disk, and what a bad disk did
    backlog                    the recent stream in memory (partial resyncs)
    epochs, replids            terms and replication ids, persisted beside the data
    base                       Node: one engine on one event loop, the argv dispatch, blocking
                               reads, sliced long reads (slices), INFO (infotext)
    logs, metrics, clock       structured log lines, Prometheus counters, the wall clock in ms

Nothing here imports a role (`xstream.primary`, `xstream.replica`), an edge (`xstream.server`)
or protobuf's generated modules: the floors above import this one, never the other way.
"""
