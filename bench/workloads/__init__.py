"""The workloads: each orchestrates its cells for every system and records results."""
