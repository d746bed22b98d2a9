"""Secrets known by keyed digests (a resumed job's) are redacted as the secrets themselves
are, and the digests written give nothing of them away."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.security import digested
from unfurl_lite.security.redaction import REDACTED, redact, redact_text, variants

KEY = os.urandom(32)
SECRETS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=3,
                  max_size=24).filter(lambda s: s.strip() == s and len(set(s)) > 2)
NOISE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


def known(secret: str) -> digested.SecretSet:
    return digested.SecretSet((), digested.HashedForms(KEY, digested.entries(
        KEY, variants(secret))))


@given(SECRETS, st.lists(st.tuples(NOISE, st.integers(0, 30)), min_size=1, max_size=4))
def test_digests_redact_every_form_the_secret_itself_redacts(secret, pieces):
    forms = variants(secret)
    text = "".join(noise + forms[index % len(forms)] for noise, index in pieces)
    by_digest = redact_text(text, known(secret))
    for form in forms:
        assert form not in by_digest or form in REDACTED
    assert redact_text(by_digest, {secret}) == by_digest  # nothing left to find in clear


@given(SECRETS, NOISE)
def test_text_without_the_secret_is_left_alone(secret, noise):
    if any(form in noise for form in variants(secret)):
        return
    assert redact_text(noise, known(secret)) == noise


def test_entries_hold_no_form_and_redact_walks_values():
    secret = "hunter2-derived"
    entries = digested.entries(KEY, variants(secret))
    assert not any(form in entry for entry in entries for form in variants(secret))
    value = {"stdout": f"got {secret} and {secret.upper()}", "n": 3}
    assert redact(value, known(secret)) == {"stdout": f"got {REDACTED} and {REDACTED}", "n": 3}
    other_key = digested.HashedForms(os.urandom(32), entries)  # another clone: no match
    assert redact_text(f"got {secret}", digested.SecretSet((), other_key)) == f"got {secret}"
