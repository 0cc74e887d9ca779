"""The replica: replays the primary's log into its own engine and serves reads (xstream.replica)."""
