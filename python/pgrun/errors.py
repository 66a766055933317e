"""pgrun's errors as Python exceptions: one class per SQLSTATE category, mapped in one place.

Every pgrun SQL function raises with MESSAGE = a stable dotted code (``job.lease_lost``)
and a SQLSTATE in class ``RQ`` that names the category (docs/errors.md); refusals by role
use the standard ``42501`` (insufficient privilege). ``translate``
turns a psycopg error into the matching ``PgrunError`` subclass; it never parses English.
"""

from __future__ import annotations

import re

import psycopg


class PgrunError(Exception):
    """A pgrun function refused the call. ``code`` is the stable dotted code."""

    sqlstate = ""

    def __init__(self, code: str, detail: str | None = None, hint: str | None = None) -> None:
        super().__init__(code if not detail else f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.hint = hint


class ConflictError(PgrunError):
    sqlstate = "RQ001"


class NotFoundError(PgrunError):
    sqlstate = "RQ002"


class InvalidInputError(PgrunError):
    sqlstate = "RQ003"


class LeaseLostError(PgrunError):
    sqlstate = "RQ004"


class InternalError(PgrunError):
    sqlstate = "RQ005"


class UnsupportedError(PgrunError):
    sqlstate = "RQ006"


class PermissionDeniedError(PgrunError):
    """The caller's role may not do this (docs/security.md): PostgreSQL's own "permission
    denied for function ..." (code ``access.denied``, the server's message as detail), or a
    pgrun refusal such as ``access.organization_denied``."""

    sqlstate = "42501"


CATEGORIES: tuple[type[PgrunError], ...] = (
    ConflictError,
    NotFoundError,
    InvalidInputError,
    LeaseLostError,
    InternalError,
    UnsupportedError,
    PermissionDeniedError,
)
BY_SQLSTATE: dict[str, type[PgrunError]] = {cls.sqlstate: cls for cls in CATEGORIES}
_DOTTED_CODE = re.compile(r"^[a-z_]+\.[a-z_]+$")


def translate(error: psycopg.Error) -> PgrunError | None:
    """The pgrun exception for `error`, or None when it is not a pgrun error."""
    cls = BY_SQLSTATE.get(error.sqlstate or "")
    if cls is None:
        return None
    diag = error.diag
    message = diag.message_primary or str(error)
    if cls is PermissionDeniedError and not _DOTTED_CODE.match(message):
        # PostgreSQL's own privilege check: its English message becomes the detail.
        return cls("access.denied", message, diag.message_hint)
    return cls(message, diag.message_detail, diag.message_hint)
