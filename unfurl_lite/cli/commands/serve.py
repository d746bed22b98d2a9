"""``unfurl serve``: the read-only local dashboard."""

from __future__ import annotations

import click

from unfurl_lite.cli.commands.common import ensemble_option


@click.command()
@ensemble_option()
@click.option("--port", type=click.IntRange(0, 65535), default=8081, show_default=True,
              help="The port to listen on (0 picks a free one).")
@click.option("--host", "--address", "host", default="127.0.0.1", show_default=True,
              help="The address to listen on (--address as in Unfurl); anything but loopback "
              "exposes the dashboard.")
@click.option("--no-browser", is_flag=True, help="Do not open a web browser.")
def serve(ensemble: str | None, port: int, host: str, no_browser: bool) -> None:
    """Serve a read-only dashboard of the project: topology, instances, history, jobs.

    It listens on 127.0.0.1 unless --host says otherwise, never writes to the project,
    and redacts secrets as the records do. Ctrl-C (or SIGTERM, as a service manager
    sends) stops it.
    """
    # start-up: keeps load.loader, jinja2 (152 modules) off serve's import until serve() runs
    from unfurl_lite.load.loader import resolve_path
    from unfurl_lite.view.dashboard.server import is_loopback, start

    path = resolve_path(ensemble)
    if not is_loopback(host):
        click.echo(f"warning: listening on {host}, not loopback: anyone who can reach this "
                   "machine on that address can read this project's dashboard (status, "
                   "history, job output)", err=True)
    server = start(path, host, port)
    _stop_on_sigterm()
    try:
        click.echo(f"Serving the dashboard of {path} at {server.url} (Ctrl-C to stop)")
        if not no_browser:
            import webbrowser  # start-up: keeps webbrowser (8 modules) off serve's import

            webbrowser.open(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("Stopped.", err=True)
    finally:
        server.stop.set()
        server.server_close()


def _stop_on_sigterm() -> None:
    """SIGTERM ends the server as Ctrl-C does, with its message and exit 0, so that
    systemd, docker or a script's ``kill`` stop it cleanly; it works even where Ctrl-C
    cannot (a shell started the server in the background with SIGINT ignored)."""
    import signal  # start-up: keeps signal (1 module) off serve's import

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
