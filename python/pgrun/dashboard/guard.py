"""The dashboard's two gates: an optional access token, and CSRF protection of every POST.

* Token (``--token`` / PGRUN_DASHBOARD_TOKEN): every request but ``/login`` and the static
  files must carry ``Authorization: Bearer <token>`` or the cookie the login form sets (an
  HMAC of the token, not the token itself). Without a token configured, nothing is asked:
  the dashboard binds 127.0.0.1 by default.
* CSRF: signed double submit. Each browser gets a random nonce in a cookie (SameSite=Strict,
  HttpOnly); every form carries ``HMAC(secret, nonce)`` in a hidden field (or the
  ``X-CSRF-Token`` header). A POST whose field does not match its cookie's nonce is refused
  with 403 before anything runs: another site can neither read the cookie nor compute the
  HMAC without the server's secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

CSRF_COOKIE = "pgrun_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
AUTH_COOKIE = "pgrun_auth"
OPEN_PATHS = ("/login", "/static/")


def _mac(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


class Guard:
    def __init__(self, *, token: str | None, secret: bytes | None = None) -> None:
        self.token = token or None
        self.secret = secret or secrets.token_bytes(32)

    # -- token ----------------------------------------------------------------------------

    def session_value(self) -> str:
        assert self.token is not None
        return _mac(self.token.encode(), "pgrun-dashboard-session")

    def token_ok(self, candidate: str) -> bool:
        return self.token is not None and hmac.compare_digest(candidate.encode(), self.token.encode())

    def authenticated(self, request: Request) -> bool:
        if self.token is None:
            return True
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer ") and self.token_ok(header[7:].strip()):
            return True
        cookie = request.cookies.get(AUTH_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie, self.session_value())

    # -- CSRF -----------------------------------------------------------------------------

    def csrf_token(self, request: Request) -> str:
        """The hidden-field value for this browser's nonce (set by the middleware)."""
        nonce: str = request.state.csrf_nonce
        return _mac(self.secret, nonce)

    def csrf_ok(self, request: Request, submitted: str) -> bool:
        nonce = request.cookies.get(CSRF_COOKIE)
        if not nonce or not submitted:
            return False
        return hmac.compare_digest(submitted, _mac(self.secret, nonce))

    async def form(self, request: Request) -> FormData:
        """The POST's form, once its CSRF token has been checked (403 otherwise)."""
        form = await request.form()
        submitted = form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER) or ""
        if not isinstance(submitted, str) or not self.csrf_ok(request, submitted):
            raise HTTPException(
                403, "The form's CSRF token is missing or does not match: reload the page and retry."
            )
        return form


class GuardMiddleware(BaseHTTPMiddleware):
    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        super().__init__(app)
        self.guard = guard

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        path = request.url.path
        if not path.startswith(OPEN_PATHS) and not self.guard.authenticated(request):
            if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                return RedirectResponse(f"/login?next={quote(path)}", status_code=303)
            return PlainTextResponse(
                "401: this dashboard needs its token (Authorization: Bearer ..., or log in at /login)",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        nonce = request.cookies.get(CSRF_COOKIE)
        fresh = not nonce or len(nonce) > 128
        request.state.csrf_nonce = secrets.token_urlsafe(32) if fresh else nonce
        response = await call_next(request)
        if fresh:
            response.set_cookie(CSRF_COOKIE, request.state.csrf_nonce, httponly=True, samesite="strict")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response
