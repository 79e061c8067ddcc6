"""Cells for the peers, each run in its own subprocess on bench/.venv's python."""
