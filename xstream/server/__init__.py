"""What primary and replica share: the replication log's records, the backlog, the append-only
file and snapshots on disk, the gRPC wire translation, the node core that serves commands
(blocking reads included), logging and metrics."""
