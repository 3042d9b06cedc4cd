"""Users and their API tokens: accounts, logging in by token, admin and disabled flags."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from web.models import (
    ApiToken,
    User,
)


def user_by_name(db: Session, username: str) -> User | None:
    return db.scalar(select(User).where(User.username_key == username.casefold()))


def create_user(db: Session, username: str, password_hash: str, now: datetime,
                lang: str = "zh", is_admin: bool = False) -> User | None:
    """The new user, or None when the name is taken."""
    user = User(username=username, username_key=username.casefold(),
                password_hash=password_hash, lang=lang, created_at=now, is_admin=is_admin,
                disabled=False)
    db.add(user)
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        return None
    return user


def end_sessions(db: Session, user_id: int) -> None:
    """Every session cookie of the user stops working (they carry the old generation)."""
    db.execute(update(User).where(User.id == user_id)
               .values(session_gen=User.session_gen + 1))
    db.commit()


def set_lang(db: Session, user: User, lang: str) -> None:
    user.lang = lang
    db.commit()


def create_token(db: Session, user: User, token_hash: str, now: datetime, days: int) -> None:
    db.add(ApiToken(user_id=user.id, token_hash=token_hash, created_at=now,
                    expires_at=now + timedelta(days=days)))
    db.commit()


def user_for_token(db: Session, token_hash: str, now: datetime) -> User | None:
    return db.scalar(select(User).join(ApiToken, ApiToken.user_id == User.id)
                     .where(ApiToken.token_hash == token_hash, ApiToken.expires_at > now,
                            User.disabled.is_(False)))


def all_users(db: Session) -> list[User]:
    return list(db.scalars(select(User).order_by(User.id)))


def set_disabled(db: Session, user: User, disabled: bool) -> None:
    user.disabled = disabled
    if disabled:  # its bearer tokens end now (the session is checked on every request)
        db.execute(delete(ApiToken).where(ApiToken.user_id == user.id))


def set_admin(db: Session, user: User, admin: bool) -> None:
    db.execute(update(User).where(User.id == user.id).values(is_admin=admin))
    user.is_admin = admin
