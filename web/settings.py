"""Settings, from ``JUDGE_*`` environment variables (every field is documented in
web/README.md; a test checks that). ``Settings.prepare()`` creates the data folder and the
secrets the app keeps there when they are not given."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    lease_seconds: float = Field(default=60.0, gt=0)
    claim_wait_seconds: float = Field(default=20.0, ge=0)
    token_days: int = Field(default=30, ge=1)
    session_days: int = Field(default=14, ge=1)
    cookie_secure: bool = False
    registration_open: bool = True

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
