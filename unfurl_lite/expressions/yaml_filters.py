"""Ansible's YAML filters (`to_yaml`, `to_nice_yaml`, `from_yaml`, `from_yaml_all`) as
Ansible's PyYAML-based dumper and loader give them: YAML 1.1 on the way in (`yes` is
true), libyaml's layout on the way out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import ExpressionError

if TYPE_CHECKING:
    from unfurl_lite.model.narrow import YAMLValue


def _yaml_plain(value: YAMLValue) -> Any:
    """Plain types for the dumper (secrets are text subclasses; views are mappings)."""
    if isinstance(value, Mapping):
        return {_yaml_plain(k): _yaml_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_yaml_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def _yaml_dump(value: Any, **options: Any) -> str:
    """PyYAML's output, as Ansible's dumper (libyaml's when there) writes it."""
    import yaml  # start-up: keeps yaml (23 modules) off yaml_filters's import

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    options.setdefault("allow_unicode", True)
    try:
        text = yaml.dump(_yaml_plain(value), Dumper=dumper, **options)
    except (TypeError, yaml.YAMLError) as exc:
        raise ExpressionError(f"to_yaml: {exc}") from None
    if dumper is yaml.SafeDumper and text.endswith("\n...\n"):
        text = text[:-4]  # libyaml leaves a scalar document open, as Ansible's output has it
    return text


def to_yaml(value: Any, *args: Any, **kw: Any) -> str:
    return _yaml_dump(value, default_flow_style=kw.pop("default_flow_style", None), **kw)


def to_nice_yaml(value: Any, indent: int = 4, *args: Any, **kw: Any) -> str:
    return _yaml_dump(value, indent=indent, default_flow_style=False, **kw)


def _yaml_load(text: str) -> Any:
    """YAML 1.1 as Ansible's loader reads it (PyYAML): `yes`, `on` are booleans."""
    import yaml  # start-up: keeps yaml (23 modules) off yaml_filters's import

    try:
        # (str(): libyaml reads exact text only, not Markup or a string filter's text)
        return yaml.load(str(text), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise ExpressionError(f"from_yaml: {exc}") from None


def from_yaml(data: Any) -> Any:
    return _yaml_load(data) if isinstance(data, str) else data


def from_yaml_all(data: Any) -> Any:
    import yaml  # start-up: keeps yaml (23 modules) off yaml_filters's import

    if not isinstance(data, str):
        return data
    try:
        return list(yaml.load_all(str(data), Loader=getattr(yaml, "CSafeLoader",
                                                               yaml.SafeLoader)))
    except yaml.YAMLError as exc:
        raise ExpressionError(f"from_yaml_all: {exc}") from None
