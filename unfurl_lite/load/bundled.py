"""The examples shipped inside the package, so ``unfurl init DIR --from three-tier`` works
after a plain ``pip install``, from any directory."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example_names() -> list[str]:
    if not EXAMPLES.is_dir():
        return []
    return sorted(p.name for p in EXAMPLES.iterdir() if (p / "ensemble.yaml").is_file())


def describe(name: str) -> str:
    """The first sentence of the example's opening comment: what it shows."""
    lines: list[str] = []
    for line in (EXAMPLES / name / "ensemble.yaml").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines)
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text


def resolve_source(source: str) -> Path | None:
    """A project directory to copy: a path with an ensemble.yaml wins; otherwise a bundled
    example's name. None when it is neither."""
    path = Path(source).expanduser()
    if (path / "ensemble.yaml").is_file():
        return path
    if "/" not in source and source in example_names():
        return EXAMPLES / source
    return None
