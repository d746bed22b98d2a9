"""The Celery app is built when first used: importing the distributed executor does no
work (no Celery import, no app, no kombu patch), and ``celery -A`` still finds ``app``."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}).stdout


def test_importing_the_celery_executor_builds_no_app() -> None:
    out = _python(
        "import sys; import unfurl_lite.run.executors.celery as c; "
        "print('celery' in sys.modules, 'kombu' in sys.modules, 'app' in vars(c))")
    assert out.split() == ["False", "False", "False"]


def test_the_app_is_built_on_first_use_and_kept() -> None:
    out = _python(
        "import unfurl_lite.run.executors.celery as c; a = c.app; "
        "print(type(a).__name__, c.app is a, a.conf.worker_pool, "
        "'unfurl_lite.run_operation' in a.tasks)")
    assert out.split() == ["Celery", "True", "unfurl_lite.run.executors.celery.worker:ThreadPool",
                           "True"]
