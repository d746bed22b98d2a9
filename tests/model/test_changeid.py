from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.errors import ChangeIdError
from unfurl_lite.model import changeid

REFERENCE_TIME = datetime(2026, 11, 22, 18, 34, 9, 650000, tzinfo=UTC)


def test_matches_unfurl_reference_ids():
    # an Unfurl 1.2.0 job: A6BMIY9e started 2026-11-22 18:34:09.66 UTC
    job = changeid.parse("A6BMIY9e0000")
    assert job.is_job
    assert job.time.replace(microsecond=0) == datetime(2026, 11, 22, 18, 34, 9, tzinfo=UTC)
    assert str(changeid.ChangeId(changeid.ticks_of(REFERENCE_TIME), 0)) == "A6BMIY9e0000"
    assert str(job.for_task(2)) == "A6BMIY9e0002"
    assert changeid.parse("A6BMIYnJ0001").job == changeid.parse("A6BMIYnJ0000")


def test_decode_gives_the_start_time_to_a_62nd_of_a_second():
    moment = datetime(2031, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)
    decoded = changeid.decode(str(changeid.new_job_id(now=moment)))
    assert abs((decoded - moment).total_seconds()) < 1 / 62


def test_ids_made_in_the_same_second_strictly_increase():
    now = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)
    previous = None
    ids = []
    for _ in range(500):
        previous = changeid.new_job_id(previous, now)
        ids.append(str(previous))
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_a_clock_that_goes_backwards_still_gives_a_later_id():
    later = changeid.new_job_id(now=datetime(2026, 5, 1, 12, 4, tzinfo=UTC))
    earlier_clock = changeid.new_job_id(later, now=datetime(2026, 5, 1, 12, 0, tzinfo=UTC))
    assert str(earlier_clock) > str(later)


def test_a_record_from_the_future_does_not_move_the_clock():
    forged = changeid.new_job_id(now=datetime(2031, 1, 1, tzinfo=UTC))
    now = datetime(2026, 5, 1, tzinfo=UTC)
    assert changeid.new_job_id(forged, now=now) == changeid.new_job_id(now=now)


@pytest.mark.parametrize("bad", ["", "B6BMIY9e0000", "A6BMIY9e00", "A6B!IY9e0000", "A6BMIY9eZZZZ"])
def test_malformed_ids_are_rejected(bad):
    with pytest.raises(ChangeIdError):
        changeid.parse(bad)


@given(
    st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2080, 12, 31)),
    st.integers(min_value=0, max_value=0xFFFF),
)
def test_round_trip_and_order(moment, task):
    cid = changeid.ChangeId(changeid.ticks_of(moment), task)
    assert changeid.parse(str(cid)) == cid
    later = changeid.ChangeId(cid.ticks + 1, 0)
    assert str(later) > str(cid)
