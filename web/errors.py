"""What the app refuses, as domain errors: services and routes raise them with a message
for the person who asked (both languages), and know nothing of HTTP. One handler
(:mod:`web.error_handlers`) turns each kind into its status code, a JSON ``{"detail"}``
under /api and /worker or a page elsewhere."""

from __future__ import annotations

from judge.i18n import T


class DomainError(Exception):
    """A request the app refuses; ``message`` says why, in both languages."""

    def __init__(self, message: T) -> None:
        super().__init__(message.en)
        self.message = message


class BadRequest(DomainError):
    """The request cannot be used as sent (code that is not UTF-8, a refused package)."""


class Unauthorized(DomainError):
    """Who is asking is not known: no token, a wrong or expired one, a wrong password."""


class Forbidden(DomainError):
    """Known, but not allowed (not an admin, a failed CSRF check, registration closed)."""


class NotFound(DomainError):
    """No such thing, or not one this user may know exists."""


class Conflict(DomainError):
    """Not in this state (publishing a version that is not valid, a lost lease)."""


class TooLarge(DomainError):
    """More than the app takes (code, an archive, a request body)."""


class Invalid(DomainError):
    """Well-formed, but breaks a rule (a username, a password, form fields)."""


class RateLimited(DomainError):
    """Too many requests; ``retry_after`` seconds when waiting helps."""

    def __init__(self, message: T, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(DomainError):
    """Cannot be done right now (no GPU worker, the practice pack cannot be built)."""


class LoginRequired(Exception):
    """A page that needs a logged-in user: redirect to the login page."""

    def __init__(self, next_path: str) -> None:
        self.next_path = next_path
