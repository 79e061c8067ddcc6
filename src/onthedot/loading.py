"""The App that a path `module:attr` names (`--app`, $ONTHEDOT_APP, Django's
`settings.ONTHEDOT["APP"]`): the attribute itself, or what a factory function there returns.
Anything else (a FastAPI or Flask object, a module, a class) is refused with one line that says
what it is and names the Apps the module does have."""

from __future__ import annotations

import functools
import inspect
from types import ModuleType

from onthedot.app import App
from onthedot.domain.errors import ConfigurationError


def app_in(module: ModuleType, attr: str, path: str) -> App:
    """The App at `module.attr` (dotted), calling it first when it is a factory function (one
    that takes no argument). Raises ConfigurationError naming what `path` holds instead."""
    obj: object = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ConfigurationError(
                f"{path!r}: module {module.__name__!r} has no attribute {attr!r}"
                f"{_apps_hint(module)}"
            )
    if isinstance(obj, App):
        return obj
    if _is_factory(obj):
        assert callable(obj)
        try:
            inspect.signature(obj).bind()
        except TypeError:
            raise ConfigurationError(
                f"{path!r} is a function that needs arguments; an app factory takes none"
                f"{_apps_hint(module)}"
            ) from None
        except ValueError:  # no signature to read (a builtin): call it and see
            pass
        built = obj()
        if isinstance(built, App):
            return built
        raise ConfigurationError(
            f"{path!r} returned {_what(built)}, not an onthedot App{_apps_hint(module)}"
        )
    raise ConfigurationError(f"{path!r} is {_what(obj)}, not an onthedot App{_apps_hint(module)}")


def _is_factory(obj: object) -> bool:
    """A function to call for the App; never an object that is merely callable (an ASGI or WSGI
    app such as FastAPI's: calling it would run it) and never a class."""
    return (
        inspect.isfunction(obj)
        or inspect.ismethod(obj)
        or inspect.isbuiltin(obj)
        or isinstance(obj, functools.partial)
    )


def _what(obj: object) -> str:
    """`a FastAPI object (fastapi.applications.FastAPI)`, `module 'x'`, `a function`..."""
    if isinstance(obj, ModuleType):
        return f"module {obj.__name__!r}"
    if inspect.isclass(obj):
        return f"the class {obj.__module__}.{obj.__qualname__}"
    kind = type(obj)
    article = "an" if kind.__name__[:1].lower() in "aeiou" else "a"
    where = f" ({kind.__module__}.{kind.__qualname__})" if kind.__module__ != "builtins" else ""
    return f"{article} {kind.__name__} object{where}"


def _apps_hint(module: ModuleType) -> str:
    """`; module 'main' has the App(s) jobs (use main:jobs)`, or that it has none."""
    names = sorted(name for name, value in vars(module).items() if isinstance(value, App))
    if not names:
        return f"; module {module.__name__!r} has no onthedot App at its top level"
    name = module.__name__
    return f"; module {name!r} has the App(s) {', '.join(names)} (use {name}:{names[0]})"
