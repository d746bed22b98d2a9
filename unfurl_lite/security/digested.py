"""Secrets known only by keyed digests: what lets a resumed job redact what the job it
resumes derived, without any record ever holding a secret.

A job learns secrets as it runs (a value a template derived from a sensitive input, an
environment value an operation read) and redacts them everywhere. Its journal is
committed, so it cannot keep them in clear; a job resumed after ``kill -9`` would then
no longer know them, and output of the tasks it re-runs would be committed in clear where
an uninterrupted run redacted it. So the journal keeps, for each form of each secret the
redactor searches for (:func:`redaction.variants`), its length and two keyed digests, of
its first characters and of the whole: BLAKE2b keyed with the clone's own key
(``.git/unfurl-lite-digest-key``, never committed), which a reader of the records cannot
reverse or brute-force. The resumed job digests each distinct run of characters of that
first length in what it writes (once per distinct run, so linear in the text) and checks
the whole form where the first characters match; security/redaction.py, the one place that
redacts, replaces what is found.
"""

from __future__ import annotations

from collections.abc import Iterable

try:  # CPython's own BLAKE2 (hashlib's, without the OpenSSL start importing it costs)
    from _blake2 import blake2b
except ImportError:  # another interpreter
    from hashlib import blake2b

DIGEST_BYTES = 16
PREFIX = 4  # characters of a form digested on their own, to find where it may start


def form_digest(key: bytes, text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return blake2b(data, key=key[:64], digest_size=DIGEST_BYTES).hexdigest()


def entries(key: bytes, forms: Iterable[str]) -> list[str]:
    """The journal's ``secretDigests`` entries for ``forms``:
    ``"<length>:<digest of the first characters>:<digest of the form>"``."""
    return [f"{len(form)}:{form_digest(key, form[:PREFIX])}:{form_digest(key, form)}"
            for form in forms if form]


class HashedForms:
    """Forms of secrets known by their keyed digests."""

    def __init__(self, key: bytes, known: Iterable[str] = ()) -> None:
        self.keyed = blake2b(key=key[:64], digest_size=DIGEST_BYTES)
        #: length of the first characters -> their digest -> (form's length, its digest)
        self.starts: dict[int, dict[bytes, set[tuple[int, bytes]]]] = {}
        #: a job writes the same output to several records: found once
        self.done: dict[str, list[tuple[int, int]]] = {}
        self.add(known)

    def _digest(self, text: str) -> bytes:
        """:func:`form_digest`, from a copy of the keyed state (no key setup each time)."""
        state = self.keyed.copy()
        state.update(text.encode("utf-8", "surrogatepass"))
        return state.digest()

    def add(self, known: Iterable[str]) -> None:
        for entry in known:
            parts = str(entry).split(":")
            if len(parts) != 3 or not parts[0].isdigit() or int(parts[0]) < 1:
                continue  # not an entry of this format: ignored
            try:
                start, whole = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            except ValueError:
                continue
            length = int(parts[0])
            self.starts.setdefault(min(length, PREFIX), {}).setdefault(start, set()).add(
                (length, whole))

    def __bool__(self) -> bool:
        return bool(self.starts)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where known forms are in ``text``: (start, length), in order, the longest where
        two overlap (security/redaction.py replaces them)."""
        if len(text) < min(self.starts, default=PREFIX):
            return []
        cached = self.done.get(text)
        if cached is None:
            cached = self._spans(text)
            if len(self.done) > 1024:
                self.done.clear()
            self.done[text] = cached
        return cached

    def _spans(self, text: str) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []  # (start, length)
        for prefix, candidates in self.starts.items():
            seen: dict[str, bytes] = {}
            for index in range(len(text) - prefix + 1):
                piece = text[index:index + prefix]
                digest = seen.get(piece)
                if digest is None:
                    digest = seen[piece] = self._digest(piece)
                for length, whole in candidates.get(digest, ()):
                    end = index + length
                    if end <= len(text) and self._digest(text[index:end]) == whole:
                        found.append((index, length))
        spans: list[tuple[int, int]] = []
        position = 0
        for start, length in sorted(found, key=lambda m: (m[0], -m[1])):
            if start >= position:  # not inside a form already found
                spans.append((start, length))
                position = start + length
        return spans


class SecretSet(set[str]):
    """The secrets a job knows: in clear (its own), plus ``hashed`` forms of those an
    earlier run of the job derived (see the module's docstring)."""

    hashed: HashedForms | None = None

    def __init__(self, secrets: Iterable[str] = (), hashed: HashedForms | None = None) -> None:
        super().__init__(secrets)
        self.hashed = hashed
