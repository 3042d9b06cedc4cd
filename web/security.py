"""Passwords (argon2id), API bearer tokens (random, stored as sha256) and the CSRF token
kept in the signed session cookie (Starlette's SessionMiddleware signs it with itsdangerous).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# OWASP's argon2id minimum (19 MiB, 2 passes, 1 lane): ~0.1 s on a small server, where the
# library default (64 MiB, 3 passes, 4 lanes) takes ~0.7 s on two cores.
_hasher = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
# Verified against when a username does not exist, so both cases take the same time.
_DUMMY_HASH = _hasher.hash("not a password of anyone")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(password_hash or _DUMMY_HASH, password) and bool(password_hash)
    except (VerificationError, InvalidHashError):
        return False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_token(session: dict[str, Any]) -> str:
    """The session's CSRF token, made on first use (the form pages put it in a hidden
    field; page POSTs must send it back)."""
    token = session.get("csrf")
    if not isinstance(token, str) or len(token) < 20:
        token = session["csrf"] = secrets.token_urlsafe(24)
    return token


def csrf_ok(session: dict[str, Any], sent: str | None) -> bool:
    token = session.get("csrf")
    return isinstance(token, str) and bool(sent) and secrets.compare_digest(token, sent or "")
