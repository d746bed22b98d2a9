"""The dashboard's HTTP server: the standard library's ThreadingHTTPServer, GET only.

No web framework: the pages are few, read-only and local, and the standard library's
server keeps ``unfurl serve`` free of new dependencies. Every response is built from the
api's data through autoescaping Jinja2 templates; anything that is not a known page is a
404 page, any method but GET and HEAD a 405, and no error becomes a traceback in the
browser. Requests whose Host header is not the address the server listens on are refused,
so a web page elsewhere cannot read the dashboard through DNS rebinding.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from unfurl_lite import api
from unfurl_lite.errors import HistoryError, UnfurlLiteError
from unfurl_lite.view.dashboard import html, live, pages
from unfurl_lite.view.dashboard.pages import NotFound
from unfurl_lite.view.dashboard.picture import topology_svg

CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".svg": "image/svg+xml"}
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}

Route = Callable[["Handler", re.Match[str], dict[str, str]], None]


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class DashboardServer(ThreadingHTTPServer):
    """One project's dashboard; ``stop`` ends the live streams when the server shuts down."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], ensemble: Path) -> None:
        self.ensemble = ensemble
        self.stop = threading.Event()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}/"

    def shutdown(self) -> None:
        self.stop.set()
        super().shutdown()


class Handler(BaseHTTPRequestHandler):
    server: DashboardServer  # pyright: ignore[reportIncompatibleVariableOverride]  # always ours
    server_version = "unfurl-dashboard"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a quiet server: the terminal shows the URL and errors only

    # ---------------------------------------------------------------------- dispatch

    def do_GET(self) -> None:
        self._dispatch(head=False)

    def do_HEAD(self) -> None:
        self._dispatch(head=True)

    def _refuse_method(self) -> None:
        self._page(HTTPStatus.METHOD_NOT_ALLOWED, html.error_page(
            405, "Method not allowed", "The dashboard is read-only: it answers GET and HEAD."),
            extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method

    def _dispatch(self, head: bool) -> None:
        self.head = head
        if not self._host_allowed():
            self._page(HTTPStatus.MISDIRECTED_REQUEST, html.error_page(
                421, "Wrong host", "This dashboard answers only at the address it listens on."))
            return
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        path = unquote(parts.path)
        try:
            for pattern, route in ROUTES:
                match = pattern.fullmatch(path)
                if match:
                    route(self, match, query)
                    return
            raise NotFound(f"no page at {path}")
        except NotFound as exc:
            self._page(HTTPStatus.NOT_FOUND, html.error_page(404, "Not found", exc.message))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away
        except UnfurlLiteError as exc:
            self._page(HTTPStatus.UNPROCESSABLE_ENTITY,
                       html.error_page(422, "Cannot read the project", exc.format()))
        except Exception:  # a bug: said on the server's stderr, never shown to the browser
            traceback.print_exc(file=sys.stderr)
            self._page(HTTPStatus.INTERNAL_SERVER_ERROR, html.error_page(
                500, "Internal error", "The dashboard hit a bug; the server's terminal has "
                "the details."))

    def _host_allowed(self) -> bool:
        host = (self.headers.get("Host") or "").strip()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        listening = str(self.server.server_address[0])
        if is_loopback(listening):
            return is_loopback(name)
        return True  # --host given: the user chose who may reach it

    # ---------------------------------------------------------------------- responses

    def _send(self, status: int, body: bytes, content_type: str,
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if not getattr(self, "head", False):
            self.wfile.write(body)

    def _page(self, status: int, html: str, extra: dict[str, str] | None = None) -> None:
        self._send(status, html.encode("utf-8"), "text/html; charset=utf-8", extra)

    def _json(self, data: Any) -> None:
        body = json.dumps(data, indent=2, default=str).encode("utf-8")
        self._send(HTTPStatus.OK, body, "application/json")

    def _stream(self, events: Iterator[tuple[str, dict[str, Any] | None]]) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if self.head:
            return
        try:
            for name, data in events:
                chunk = ": keepalive\n\n" if not name else (
                    f"event: {name}\ndata: {json.dumps(data, default=str)}\n\n")
                self.wfile.write(chunk.encode("utf-8"))
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page was closed
        except Exception:  # headers are sent: end the stream, the browser reconnects
            traceback.print_exc(file=sys.stderr)

    # ---------------------------------------------------------------------- pages

    def overview(self, match: re.Match[str], query: dict[str, str]) -> None:
        self._page(HTTPStatus.OK, html.overview(self.server.ensemble,
                                                  instances=query.get("view") == "instances"))

    def history(self, match: re.Match[str], query: dict[str, str]) -> None:
        self._page(HTTPStatus.OK, html.history(self.server.ensemble, query.get("instance")))

    def job(self, match: re.Match[str], query: dict[str, str]) -> None:
        self._page(HTTPStatus.OK, html.job(self.server.ensemble, match.group(1)))

    def job_events(self, match: re.Match[str], query: dict[str, str]) -> None:

        page = pages.job_page(self.server.ensemble, match.group(1))  # 404 if unknown
        self._stream(live.job_events(self.server.ensemble, page.change_id, self.server.stop))

    def project_events(self, match: re.Match[str], query: dict[str, str]) -> None:
        self._stream(live.project_events(self.server.ensemble, self.server.stop))

    def favicon(self, match: re.Match[str], query: dict[str, str]) -> None:
        self._send(HTTPStatus.OK, (STATIC / "favicon.svg").read_bytes(), "image/svg+xml")

    def static(self, match: re.Match[str], query: dict[str, str]) -> None:
        name = match.group(1)
        path = STATIC / name
        if path.suffix not in STATIC_TYPES or not path.is_file():
            raise NotFound(f"no file {name}")
        self._send(HTTPStatus.OK, path.read_bytes(), STATIC_TYPES[path.suffix])

    def api_status(self, match: re.Match[str], query: dict[str, str]) -> None:

        self._json(api.status(self.server.ensemble))

    def api_history(self, match: re.Match[str], query: dict[str, str]) -> None:

        try:
            self._json(pages.jobs(self.server.ensemble, query.get("instance")))
        except HistoryError as exc:  # an instance nothing knows
            raise NotFound(exc.format()) from None

    def api_job(self, match: re.Match[str], query: dict[str, str]) -> None:

        self._json(pages.job_json(pages.job_page(self.server.ensemble, match.group(1))))

    def topology(self, match: re.Match[str], query: dict[str, str]) -> None:
        svg, _ = topology_svg(self.server.ensemble, instances=query.get("view") == "instances")
        self._send(HTTPStatus.OK, svg.encode("utf-8"), "image/svg+xml")


STATIC = Path(__file__).resolve().parent / "static"
_ID = r"([A-Za-z0-9]{1,20})"
ROUTES: list[tuple[re.Pattern[str], Callable[..., None]]] = [
    (re.compile(r"/"), Handler.overview),
    (re.compile(r"/history/?"), Handler.history),
    (re.compile(rf"/jobs/{_ID}/?"), Handler.job),
    (re.compile(rf"/jobs/{_ID}/events"), Handler.job_events),
    (re.compile(r"/events"), Handler.project_events),
    (re.compile(r"/static/([\w-]+\.\w+)"), Handler.static),
    (re.compile(r"/topology\.svg"), Handler.topology),
    (re.compile(r"/favicon\.ico"), Handler.favicon),
    (re.compile(r"/api/status"), Handler.api_status),
    (re.compile(r"/api/history"), Handler.api_history),
    (re.compile(rf"/api/jobs/{_ID}"), Handler.api_job),
]


def start(ensemble: Path, host: str = "127.0.0.1", port: int = 8081) -> DashboardServer:
    """A server bound to ``host:port`` (port 0: a free one), not yet serving: call
    ``serve_forever`` (or run it in a thread) and ``shutdown`` to stop."""
    try:
        return DashboardServer((host, port), ensemble)
    except OSError as exc:
        raise UnfurlLiteError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="choose another port with --port (0 picks a free one)",
        ) from None
