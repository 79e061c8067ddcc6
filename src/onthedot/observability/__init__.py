"""Typed events the core emits; logging and metrics subscribe to them."""
