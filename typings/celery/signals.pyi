# Celery's signals, as the worker side connects to them
from collections.abc import Callable
from typing import Any

class Signal:
    def connect(
        self,
        receiver: Callable[..., Any] | None = None,
        *,
        sender: Any = None,
        weak: bool = True,
        dispatch_uid: str | None = None,
    ) -> Any: ...
    def send(self, sender: Any, **named: Any) -> list[tuple[Any, Any]]: ...

after_setup_logger: Signal
celeryd_after_setup: Signal
task_revoked: Signal
worker_init: Signal
worker_ready: Signal
worker_shutdown: Signal
worker_shutting_down: Signal

def __getattr__(name: str) -> Signal: ...
