"""No Django models: onthedot's tables are onthedot's own (see migrations/ and apps.py).

The module exists because Django sends `post_migrate` only to apps with a models module, and
that signal is what keeps onthedot's schema current on every `manage.py migrate`."""
