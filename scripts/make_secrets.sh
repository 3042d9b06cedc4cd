#!/bin/sh
# Make the secrets docker-compose.yml reads (idempotent: an existing one is kept):
# secrets/db_password, secrets/secret_key, secrets/worker_token, in a folder only you can
# enter (the files themselves are 0644: compose bind-mounts them as they are, and the
# postgres image reads its password as the postgres user, not as root).
# They are compose secrets, mounted at /run/secrets/ in the containers that need them:
# never in an image (.dockerignore), never in the environment, never in git (.gitignore).
# A worker on another machine needs secrets/worker_token (docs/deploy.md).
set -eu
cd "$(dirname "$0")/.."
mkdir -p secrets
chmod 0700 secrets
umask 022
for name in db_password secret_key worker_token; do
    if [ -s "secrets/$name" ]; then
        echo "secrets/$name: kept"
    else
        python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > "secrets/$name"
        echo "secrets/$name: made"
    fi
done
