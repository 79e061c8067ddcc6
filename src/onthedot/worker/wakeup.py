"""Waking idle workers: the generic wake-up lives with the storage, which builds the one of its
database (`Storage.wakeup`)."""

from onthedot.storage.wakeup import Wakeup

__all__ = ["Wakeup"]
