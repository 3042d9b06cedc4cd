"""Settings, from ``JUDGE_*`` environment variables (every field is documented in
web/README.md; a test checks that). ``Settings.prepare()`` creates the data folder and the
secrets the app keeps there when they are not given.

Secrets can come from files instead of the environment (compose secrets, a file only the
service may read): ``JUDGE_SECRET_KEY_FILE``, ``JUDGE_WORKER_TOKEN_FILE``, and
``JUDGE_DATABASE_PASSWORD_FILE`` (the password of ``JUDGE_DATABASE_URL``, which then names
none). A value given directly wins over its file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from web.data.ranking import RANK_RUNS, RANK_SPACING_S


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    data_dir: Path = Path("data")
    database_url: str | None = None
    problems_dir: Path | None = None
    secret_key: str | None = None
    worker_token: str | None = None
    no_sandbox: bool = False
    max_code_bytes: int = Field(default=64 * 1024, ge=1)
    submissions_per_minute: int = Field(default=6, ge=1)
    submissions_in_flight: int = Field(default=1, ge=1)
    # "Run examples" (public cases only, no record): its own limits, per user
    runs_per_minute: int = Field(default=10, ge=1)
    runs_in_flight: int = Field(default=1, ge=1)
    runs_kept: int = Field(default=20, ge=1)
    lease_seconds: float = Field(default=60.0, gt=0)
    claim_wait_seconds: float = Field(default=20.0, ge=0)
    # the leaderboard's timing: rank runs combined, and the least time from one run's end
    # to the next one's start (web.data.ranking)
    rank_runs: int = Field(default=RANK_RUNS, ge=1, le=10)
    rank_spacing_seconds: float = Field(default=RANK_SPACING_S, ge=0, le=86400)
    # the longest a cached page part (leaderboard, acceptance, a judged submission) is kept
    # when no change is announced to this process (web.page_cache)
    page_cache_seconds: float = Field(default=2.0, ge=0)
    # whole answers of the busiest GETs, per generation and credentials (web.response_cache)
    response_cache: bool = True
    token_days: int = Field(default=30, ge=1)
    session_days: int = Field(default=14, ge=1)
    cookie_secure: bool = False
    registration_open: bool = True
    secret_key_file: Path | None = None
    worker_token_file: Path | None = None
    database_password_file: Path | None = None

    @model_validator(mode="after")
    def _secrets_from_files(self) -> Settings:
        if not self.secret_key and self.secret_key_file:
            self.secret_key = _read_secret(self.secret_key_file, "JUDGE_SECRET_KEY_FILE")
        if not self.worker_token and self.worker_token_file:
            self.worker_token = _read_secret(self.worker_token_file, "JUDGE_WORKER_TOKEN_FILE")
        if self.database_password_file:
            from sqlalchemy.engine import make_url

            if not self.database_url:
                raise ValueError("JUDGE_DATABASE_PASSWORD_FILE needs JUDGE_DATABASE_URL")
            password = _read_secret(self.database_password_file,
                                    "JUDGE_DATABASE_PASSWORD_FILE")
            url = make_url(self.database_url)
            if url.password is None:
                self.database_url = url.set(password=password).render_as_string(
                    hide_password=False)
        return self

    @property
    def bank_dir(self) -> Path:
        """Every stored problem version, by content hash (see judge/problem_store.py)."""
        return self.data_dir / "bank"

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'judge.db').resolve()}"

    def prepare(self) -> Settings:
        """Create the data folder; fill in the secret key and worker token from files
        in it (made on first use, readable by this user only) unless they are set."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.secret_key:
            self.secret_key = _kept_secret(self.data_dir / "secret_key")
        if not self.worker_token:
            self.worker_token = _kept_secret(self.data_dir / "worker_token")
        return self


def _read_secret(path: Path, variable: str) -> str:
    try:
        value = path.read_text().strip()
    except OSError as e:
        raise ValueError(f"{variable}: cannot read {path}: {e.strerror}") from None
    if not value:
        raise ValueError(f"{variable}: {path} is empty")
    return value


def _kept_secret(path: Path) -> str:
    if path.is_file():
        value = path.read_text().strip()
        if value:
            return value
    value = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value
