"""Schedules: the declared registry, runtime schedules, operator controls, read views and the
scheduler, peers composed by the App."""
