"""The storage verbs' bodies, written once over a small per-database dialect."""
