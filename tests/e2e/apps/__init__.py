"""Small apps loaded by subprocess and CLI tests (`--app tests.e2e.apps.basic:app`)."""
