"""The worker: claim, execute, persist outcomes, heartbeat, stop gracefully."""
