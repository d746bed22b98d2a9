"""The broker's password: read once, from a file or the environment, and kept out of
every command line and of the environment operations can read.

Why: a command line is visible to every user of the machine (``ps``), and an
operation can read its worker's initial environment (``/proc/$PPID/environ`` stays as
the process was started, whatever it later removes from ``os.environ``). So a worker
that was given the password on its command line or in its environment starts itself
again (``exec``) without it, receiving the URL on a pipe instead; the password then
lives only in the worker's memory. docs/distributed.md has the threat model.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PASSWORD_ENV = "UNFURL_BROKER_PASSWORD"
PASSWORD_FILE_ENV = "UNFURL_BROKER_PASSWORD_FILE"
FD_ENV = "UNFURL_BROKER_FD"  # a worker's own: the pipe its URL comes on after exec
#: variables that carry the broker, its password or where it is: never given to an
#: operation, and dropped by a worker's exec
VARIABLES = ("UNFURL_BROKER", "UNFURL_BACKEND", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
             PASSWORD_ENV, PASSWORD_FILE_ENV, FD_ENV)

log = logging.getLogger(__name__)
_read: dict[str, str] = {}


def password() -> str | None:
    """The password from ``$UNFURL_BROKER_PASSWORD_FILE`` (``-``: standard input) or
    ``$UNFURL_BROKER_PASSWORD``, read once."""
    if "password" in _read:
        return _read["password"] or None
    found = ""
    path = os.environ.get(PASSWORD_FILE_ENV)
    if path:
        from unfurl_lite.errors import JobError  # start-up: keeps errors off credentials's import

        try:
            found = (sys.stdin.read() if path == "-" else Path(path).read_text()).strip("\r\n")
        except OSError as exc:
            raise JobError(f"cannot read the broker's password from {path}: {exc.strerror}",
                           hint=f"{PASSWORD_FILE_ENV} names a file holding only the "
                           "password") from None
    found = found or os.environ.get(PASSWORD_ENV, "")
    _read["password"] = found
    return found or None


def inherited() -> str | None:
    """The URL a worker passed to itself on a pipe when it started itself again."""
    if "inherited" not in _read:
        fd = os.environ.pop(FD_ENV, None)
        url = ""
        if fd and fd.isdigit():
            try:
                with os.fdopen(int(fd)) as pipe:
                    url = pipe.read()
            except OSError:
                url = ""
        _read["inherited"] = url
    return _read["inherited"] or None


def with_password(url: str, secret: str | None) -> str:
    """``url`` with ``secret`` as its password, unless it has one."""
    parts = urlsplit(url)
    if not secret or parts.password or "://" not in url:
        return url
    netloc = f"{parts.username or ''}:{secret}@{parts.hostname or ''}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def exposed(url: str) -> list[str]:
    """Where this process shows the URL's password to others: its command line, its
    environment."""
    secret = urlsplit(url).password
    if not secret:
        return []
    where: list[str] = []
    if any(secret in arg for arg in sys.argv):
        where.append("command line")
    if any(secret in value for value in os.environ.values()) or PASSWORD_FILE_ENV in os.environ:
        where.append("environment")  # the file's name too: an operation could read it
    return where


def restart_without(url: str) -> None:
    """Start this ``unfurl worker`` again (exec, same process id) with neither the
    password on its command line nor the broker in its environment; the URL comes on a
    pipe. Returns only when there is nothing to hide."""
    where = exposed(url)
    if not where:
        return
    secret = urlsplit(url).password or ""
    if "command line" in where:
        log.warning("warning: the broker's password was on the command line, where every "
                    "user of this machine can read it (ps); set %s instead",
                    PASSWORD_FILE_ENV)
    read, write = os.pipe()
    os.write(write, url.encode())
    os.close(write)
    os.set_inheritable(read, True)
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES and secret not in v}
    env[FD_ENV] = str(read)
    argv = [sys.executable, "-m", "unfurl_lite",
            *(arg.replace(secret, "") for arg in sys.argv[1:])]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)
