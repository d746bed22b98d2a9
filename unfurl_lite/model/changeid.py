"""changeIds as Unfurl writes them: ``A`` + 7 base-62 digits of UTC time + 4 hex digits.

The time part is (year - 2020, month, day, hour, minute, second, 1/62 s), one base-62
digit each, so ids sort as strings in time order. The last four hex digits number the
task within its job; task 0 is the job itself.  Example: ``A6BMIY9e0001`` is task 1 of
the job started 2026-11-22 18:34:09.65 UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from unfurl_lite.errors import ChangeIdError

#: base 62, spelled out (``string``'s constants cost an import)
DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_VALUE = {c: i for i, c in enumerate(DIGITS)}
EPOCH_YEAR = 2020
TICKS_PER_SECOND = 62
_EPOCH = datetime(EPOCH_YEAR, 1, 1, tzinfo=UTC)
MAX_TASKS = 0xFFFF


@dataclass(frozen=True, order=True)
class ChangeId:
    """A changeId: the job's start in 1/62 s ticks and the task's number."""
    ticks: int  # 1/62 s since 2020-01-01 UTC
    task: int = 0

    def __str__(self) -> str:
        return encode_ticks(self.ticks) + f"{self.task:04x}"

    @property
    def job(self) -> ChangeId:
        return ChangeId(self.ticks, 0)

    @property
    def is_job(self) -> bool:
        return self.task == 0

    @property
    def time(self) -> datetime:
        return _EPOCH + timedelta(seconds=self.ticks / TICKS_PER_SECOND)

    def for_task(self, task: int) -> ChangeId:
        if not 0 <= task <= MAX_TASKS:
            raise ChangeIdError(f"a job has at most {MAX_TASKS} tasks, not {task}")
        return ChangeId(self.ticks, task)


def ticks_of(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    since = moment.astimezone(UTC) - _EPOCH
    micros = (since.days * 86400 + since.seconds) * 1_000_000 + since.microseconds
    return micros * TICKS_PER_SECOND // 1_000_000


@lru_cache(maxsize=64)
def encode_ticks(ticks: int) -> str:
    seconds, fraction = divmod(ticks, TICKS_PER_SECOND)
    moment = _EPOCH + timedelta(seconds=seconds)
    parts = (
        moment.year - EPOCH_YEAR,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        fraction,
    )
    if not 0 <= parts[0] < len(DIGITS):
        raise ChangeIdError(f"year {moment.year} cannot be encoded in a changeId")
    return "A" + "".join(DIGITS[p] for p in parts)


def parse(text: str) -> ChangeId:
    """Parse a changeId; a bare 8-character job prefix (``A6BMIY9e``) means task 0."""
    text = str(text).strip()
    if len(text) not in (8, 12) or not text.startswith("A"):
        raise ChangeIdError(f"not a changeId: {text!r} (expected like A6BMIY9e0001)")
    try:
        year, month, day, hour, minute, second, fraction = (_VALUE[c] for c in text[1:8])
        task = int(text[8:12], 16) if len(text) == 12 else 0
        moment = datetime(EPOCH_YEAR + year, month, day, hour, minute, second, tzinfo=UTC)
    except (KeyError, ValueError) as exc:
        raise ChangeIdError(f"not a changeId: {text!r} ({exc})") from None
    if fraction >= TICKS_PER_SECOND:
        raise ChangeIdError(f"not a changeId: {text!r} (fraction digit out of range)")
    return ChangeId(ticks_of(moment) + fraction, task)


def is_changeid(text: object) -> bool:
    try:
        parse(str(text))
    except ChangeIdError:
        return False
    return True


def decode(text: str) -> datetime:
    """The UTC time a changeId's job started, to 1/62 s."""
    return parse(text).time


#: how far ahead of this machine's clock a recorded changeId may be and still be trusted
#: (clocks of machines sharing a repository differ a little)
FUTURE_TOLERANCE = timedelta(minutes=5)


def from_the_future(previous: str | ChangeId, now: datetime) -> bool:
    """Is ``previous`` dated more than :data:`FUTURE_TOLERANCE` after ``now``?"""
    last = previous if isinstance(previous, ChangeId) else parse(previous)
    return last.ticks > ticks_of(now + FUTURE_TOLERANCE)


def new_job_id(previous: str | ChangeId | None = None, now: datetime | None = None) -> ChangeId:
    """A job id for ``now`` that sorts strictly after ``previous`` (the last job's id).

    A record never moves the clock: a ``previous`` from the future (beyond
    :data:`FUTURE_TOLERANCE`) is a forged or corrupt record, or a clock set wrong, and is
    ignored rather than dragging every later id to its date."""
    moment = now or datetime.now(UTC)
    ticks = ticks_of(moment)
    if previous:
        last = previous if isinstance(previous, ChangeId) else parse(previous)
        if not from_the_future(last, moment):
            ticks = max(ticks, last.ticks + 1)
    return ChangeId(ticks, 0)


def job_time_label(job_id: ChangeId) -> str:
    """``2026-11-22-18-34-09`` as used in job and changelog file names."""
    return job_id.time.strftime("%Y-%m-%d-%H-%M-%S")


def timestamp(moment: datetime) -> str:
    """Unfurl's startTime format: ``2026-11-22-18-34-09-661717``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d-%H-%M-%S-%f")
