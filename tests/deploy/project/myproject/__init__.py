"""The project the files under deploy/ name (`ONTHEDOT_APP=myproject.tasks:app`), as
tests/deploy/test_commands.py runs their commands."""
