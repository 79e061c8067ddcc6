"""Integrations with other frameworks, each behind an optional extra: `django`
(`pip install "onthedot[django]"`) and `fastapi` (`pip install "onthedot[fastapi]"`)."""
