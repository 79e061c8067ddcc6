"""onthedot's benchmark harness: `python -m bench --quick` (see bench/README.md)."""
