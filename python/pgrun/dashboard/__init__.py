"""`pgrun dashboard`: a web UI over the pgrun SQL API (docs/dashboard.md).

Needs the ``pgrun[dashboard]`` extra (Starlette, Jinja2, uvicorn, python-multipart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.applications import Starlette


def create_app(dsn: str, **options: Any) -> Starlette:
    """The dashboard's ASGI app for ``dsn``: see ``pgrun.dashboard.app.create_app``."""
    from pgrun.dashboard.app import create_app as _create_app

    return _create_app(dsn, **options)


__all__ = ["create_app"]
