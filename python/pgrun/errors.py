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
    """A pgrun function refused the call.

    ``str(error)`` (and ``error.message``) is fit to show an end user: the category's sentence
    and the stable dotted ``code``, nothing from the arguments or the database. What the server
    said for operators stays apart: ``detail`` (ids, values) and ``hint`` (what to do), and
    ``describe()`` puts code and detail together for logs and the CLI."""

    sqlstate = ""
    #: The category's sentence for end users.
    public_message = "The job queue refused the request."

    def __init__(self, code: str, detail: str | None = None, hint: str | None = None) -> None:
        self.code = code
        self.detail = detail
        self.hint = hint
        self.message = f"{self.public_message} ({code})"
        super().__init__(self.message)

    def describe(self) -> str:
        """Code and detail, for operators (logs, the CLI): may name ids and values."""
        return self.code if not self.detail else f"{self.code}: {self.detail}"


class ConflictError(PgrunError):
    sqlstate = "RQ001"
    public_message = "The request conflicts with the current state."


class NotFoundError(PgrunError):
    sqlstate = "RQ002"
    public_message = "Not found."


class InvalidInputError(PgrunError):
    sqlstate = "RQ003"
    public_message = "The request is not valid."


class LeaseLostError(PgrunError):
    sqlstate = "RQ004"
    public_message = "This worker no longer holds the job."


class InternalError(PgrunError):
    sqlstate = "RQ005"
    public_message = "The job queue failed internally."


class UnsupportedError(PgrunError):
    sqlstate = "RQ006"
    public_message = "The request is not supported here."


class PermissionDeniedError(PgrunError):
    """The caller's role may not do this (docs/security.md): PostgreSQL's own "permission
    denied for function ..." (code ``access.denied``, the server's message as detail), or a
    pgrun refusal such as ``access.organization_denied``."""

    sqlstate = "42501"
    public_message = "Not allowed."


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


def schema_mismatch(error: BaseException, component: str) -> str:
    """What to say when a function or column this code calls is missing (undefined_function,
    undefined_column): the database was migrated by another version of pgrun, or not since
    this one was installed. ``component``: the dashboard, the worker."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return (
        f"{first}. The database's pgrun schema does not match this {component}'s code: run "
        f"`pgrun migrate` with this version (or start the {component} of the version that "
        "migrated it); `pgrun check-schema` says what differs."
    )
