"""Running a plan: the scheduler (dependency order, status rules, retries, cancel),
the executors that run operations (a local thread pool or Celery workers) and the
operations themselves (Shell, Python, Template).
"""
