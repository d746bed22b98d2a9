"""Which copy of a task may run, decided in Redis in one atomic step (a Lua script).

A *lineage* is a job and the jobs that resume it: they share one id, one reply list and,
for each task (by its number in the plan, the same in every job of the lineage), one
lease and one result. Every decision about a copy of a task is one script, so the
controller and its workers can never both be right at once:

- a worker may start a copy only if its job is alive (the controller renews
  ``alive:JOB`` every second; a job that ended, or whose controller died or lost the
  broker, has none), the copy is the one the controller wants (``current``, written
  whenever there is more than one copy) and no other copy holds the lease; the start,
  the lease and the ``started`` reply are one step;
- a copy that ends marks the lease done, keeps its result (until a controller takes it)
  and pushes the reply, in one step;
- the controller sends a copy again only if the lease is not held, and otherwise adopts
  the copy that holds it (its worker died and the message was delivered again: that run
  is the task's run now);
- a resumed job adopts what its dead predecessor left: a run still going, or a result
  that arrived after the controller died.
"""

from __future__ import annotations

from typing import Any

PREFIX = "unfurl-lite:"
ALIVE_KEY = PREFIX + "alive:"  # + job key: the controller is running it
ENDED_KEY = PREFIX + "ended:"  # + job key: the job has ended
LEASE_KEY = PREFIX + "lease:"  # + lineage:number: "CELERYID NODE" (+ " done")
CURRENT_KEY = PREFIX + "current:"  # + lineage:number: the copy the controller wants
RESULT_KEY = PREFIX + "result:"  # + lineage:number: a finished copy's reply, until taken
STARTED_KEY = PREFIX + "started:"  # + lineage:number: some copy of it has started
REPLIES_KEY = PREFIX + "replies:"  # + lineage: the controller's reply list
NONE_WANTED = "-"  # the current copy when the controller wants none (given up)

#: a worker's start: "ended", "superseded", "duplicate", "busy" or "run"
START = """
if redis.call('exists', KEYS[2]) == 1 or redis.call('exists', KEYS[1]) == 0 then
  return 'ended'
end
local current = redis.call('get', KEYS[3])
if current and current ~= ARGV[1] then return 'superseded' end
local held = redis.call('get', KEYS[4])
if held then
  if string.match(held, '^(%S+)') == ARGV[1] then return 'duplicate' end
  if string.sub(held, -5) ~= ' done' then return 'busy' end
end
redis.call('set', KEYS[4], ARGV[2], 'PX', ARGV[3])
redis.call('set', KEYS[5], '1', 'EX', ARGV[7])
if ARGV[4] ~= '' then
  redis.call('rpush', ARGV[4], ARGV[5])
  redis.call('expire', ARGV[4], ARGV[6])
end
return 'run'
"""

#: a worker's end: the lease marked done (if still ours), the result kept, the reply sent,
#: and (ARGV[7], when given) Celery's record of the outcome stored under KEYS[3]
FINISH = """
local held = redis.call('get', KEYS[1])
if held == ARGV[1] or not held then
  redis.call('set', KEYS[1], ARGV[1] .. ' done', 'EX', ARGV[4])
end
redis.call('set', KEYS[2], ARGV[2], 'EX', ARGV[5])
if ARGV[6] ~= '' then
  redis.call('rpush', ARGV[6], ARGV[3])
  redis.call('expire', ARGV[6], ARGV[5])
end
if ARGV[7] ~= '' then redis.call('set', KEYS[3], ARGV[7], 'EX', ARGV[8]) end
return 1
"""

#: a worker's end when the operation never started (it could not get the job's project):
#: the lease and the started mark go, so the task may be sent again, and the reply is sent
UNCLAIM = """
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1], KEYS[2]) end
if ARGV[2] ~= '' then
  redis.call('rpush', ARGV[2], ARGV[3])
  redis.call('expire', ARGV[2], ARGV[4])
end
return 1
"""

#: a running copy keeps its lease (taken again if a broker restart lost it); 0: another
#: copy holds it now
REFRESH = """
local held = redis.call('get', KEYS[1])
if held == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if not held then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

#: the controller sends a copy: {"send"} (``current`` is now ARGV[1]), {"running",
#: holder} (a copy runs: adopt it), {"result", reply} (ARGV[2]: a task in flight when its
#: job died, whose copy ended unseen: take its result) or {"lost"} (ARGV[4]: such a task
#: whose copy started and died: running it again needs ``resume --force``)
CLAIM = """
local held = redis.call('get', KEYS[1])
if held and string.sub(held, -5) ~= ' done' then return {'running', held} end
if held and ARGV[2] == '1' then
  local result = redis.call('get', KEYS[3])
  if result then
    redis.call('del', KEYS[3])
    return {'result', result}
  end
end
if ARGV[4] == '1' and redis.call('exists', KEYS[4]) == 1 then
  redis.call('set', KEYS[2], '-', 'EX', ARGV[3])
  return {'lost', ''}
end
redis.call('set', KEYS[2], ARGV[1], 'EX', ARGV[3])
return {'send', ''}
"""


def task_key(lineage: str, number: int) -> str:
    return f"{lineage}:{number}"


class Scripts:
    """The scripts registered on one Redis client (evalsha, loaded on first use)."""

    def __init__(self, client: Any) -> None:
        self.start = client.register_script(START)
        self.finish = client.register_script(FINISH)
        self.claim = client.register_script(CLAIM)
        self.refresh = client.register_script(REFRESH)
        self.unclaim = client.register_script(UNCLAIM)


def text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value
