"""Interfaces and their operations, from every spelling TOSCA, Unfurl and Cloudify give
them to the model: an interface's shared implementation and inputs, ``defaults``, and an
ancestor's operations under a descendant's (as Unfurl 1.2.0 merges them).

Pure, like the builder that calls it: the model of one node type, template or relationship.
"""

from __future__ import annotations

import marshal
from dataclasses import replace

from unfurl_lite.model.entities import (
    INTERFACE_ALIASES,
    OPERATION_KINDS,
    RESERVED_INTERFACE_KEYS,
    Implementation,
    Interfaces,
    Operation,
    Retry,
    canonical_interface,
    output_target,
)
from unfurl_lite.model.narrow import YAMLMap, YAMLValue, is_map

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Cloudify's interfaces by their short names: a template overriding only an operation's
#: inputs keeps its type's implementation there
CLOUDIFY_INTERFACES = frozenset(
    short for name, short in INTERFACE_ALIASES.items() if name.startswith("cloudify."))


def merge_interfaces(base: Interfaces, override: Interfaces) -> Interfaces:
    """``override``'s operations over ``base``'s. As Unfurl 1.2.0, one redeclared with no
    implementation keeps its base's when that was a mapping with ``implementation:``, loses
    it when a bare command ("no artifact or className set on operation"); Cloudify's keep."""
    merged = {name: dict(ops) for name, ops in base.items()}
    for name, ops in override.items():
        target = merged.setdefault(name, {})
        for op_name, op in ops.items():
            inherited = target.get(op_name)
            if inherited:
                op = Operation(
                    interface=op.interface,
                    name=op.name,
                    implementation=op.implementation or (
                        inherited.implementation
                        if not inherited.shorthand or name in CLOUDIFY_INTERFACES else None),
                    shorthand=op.shorthand,
                    inputs={**inherited.inputs, **op.inputs},
                    retry=op.retry or inherited.retry,
                    timeout=op.timeout or inherited.timeout,
                    environment=op.environment or inherited.environment,
                    outputs={**(inherited.outputs or {}), **(op.outputs or {})} or None,
                )
            target[op_name] = op
    return merged


def interfaces_of(data: dict[str, Any]) -> Interfaces:
    """Interfaces as Unfurl builds them: ``defaults`` (beside the interfaces) and an
    interface's own ``implementation`` and ``inputs`` apply to each of its operations; an
    operation declared with no body takes the shared implementation, so it runs."""
    result: Interfaces = {}
    defaults: YAMLMap = data.get("defaults") or {}
    for raw_name, given in data.items():
        if raw_name == "defaults":
            continue
        interface = canonical_interface(raw_name)
        body: YAMLMap = given or {}
        operations: YAMLMap | None = (
            body.get("operations")
            if "operations" in body
            else {k: v for k, v in body.items() if k not in RESERVED_INTERFACE_KEYS}
        )
        shared_inputs: YAMLMap = {**(defaults.get("inputs") or {}), **(body.get("inputs") or {})}
        shared_impl = body.get("implementation") or defaults.get("implementation")
        result[interface] = {
            name: _operation(interface, name, _with_implementation(definition, shared_impl),
                             shared_inputs)
            for name, definition in (operations or {}).items()
            if definition != "not_implemented"
        }
    return result


def marshalled(value: Any) -> bytes | None:
    """``value`` as bytes that tell it apart from any value it is not the same as: marshal's,
    which keep the order of keys and tell ``True`` from ``1`` and ``1.0`` (Python's ``==``
    does not); None for a value marshal does not take (a date, a mapping of ruamel's)."""
    try:
        return marshal.dumps(value)
    except ValueError:
        return None


def interfaces_once(data: dict[str, Any], seen: dict[bytes, Interfaces] | None) -> Interfaces:
    """:func:`interfaces_of` ``data``, made once for every equal ``data`` of one build
    (``seen``: the interfaces made so far, by ``data``'s marshalled bytes, which tell
    ``True`` from ``1`` and ``1.0`` and keep the order of keys: equal bytes, equal
    interfaces). The operations are shared by the templates that declare the same
    interfaces (they are frozen; a template's own mappings are made by
    :func:`merge_interfaces`): a generated ensemble declares its 10,000 templates' operations
    alike, and building them again was half the model's build."""
    key = marshalled(data) if seen is not None and data else None
    if key is None:  # a date, or a mapping of ruamel's: made for itself
        return interfaces_of(data)
    assert seen is not None
    found = seen.get(key)
    if found is None:
        found = seen[key] = interfaces_of(data)
    return found


def apply_defaults(interfaces: Interfaces, defaults: Any) -> Interfaces:
    """A template's ``defaults`` also fill the operations its types only declare (Unfurl
    applies them to the merged interfaces)."""
    if not is_map(defaults) or not defaults.get("implementation"):
        return interfaces
    shared_inputs: YAMLMap = defaults.get("inputs") or {}
    result: Interfaces = {}
    for name, ops in interfaces.items():
        result[name] = {}
        for op_name, op in ops.items():
            if op.implementation is None:
                filled = _operation(name, op_name, {"implementation": defaults["implementation"]},
                                    shared_inputs)
                op = replace(op, implementation=filled.implementation,
                             inputs={**shared_inputs, **op.inputs})
            result[name][op_name] = op
    return result


def _with_implementation(definition: Any, shared: Any) -> Any:
    if not shared:
        return definition
    if not definition:
        return {"implementation": shared}
    if is_map(definition) and not definition.get("implementation"):
        return {**definition, "implementation": shared}
    return definition


def _operation(
    interface: str, name: str, definition: Any, shared_inputs: dict[str, Any]
) -> Operation:
    """One operation in any of Unfurl's spellings, the interface's shared inputs under its own."""
    if definition is None:
        return Operation(interface, name, None, dict(shared_inputs))
    if isinstance(definition, str):
        return Operation(interface, name, Implementation("Shell", primary=definition),
                         dict(shared_inputs), shorthand=True)
    implementation = definition.get("implementation")
    impl: Implementation | None
    if implementation is None:
        impl = None
    elif isinstance(implementation, str):
        impl = (
            Implementation(implementation)
            if implementation in OPERATION_KINDS
            else Implementation("Shell", primary=implementation)
        )
    else:
        class_name, primary = implementation.get("className"), implementation.get("primary")
        if not class_name and isinstance(primary, str) and primary in OPERATION_KINDS:
            class_name, primary = primary, None  # `primary: Template`: Unfurl's configurator
        impl = Implementation(class_name or "Shell", primary,
                              Implementation.conditions(implementation))
    inputs: YAMLMap = {**shared_inputs, **(definition.get("inputs") or {})}
    retry_def = definition.get("retry") or (definition.get("metadata") or {}).get("retry")
    retry = (
        Retry(
            max_retries=int(retry_def.get("max_retries", 0)),
            interval=float(retry_def.get("interval", 0)),
            backoff=float(retry_def.get("backoff", 1)),
        )
        if is_map(retry_def)
        else None
    )
    impl_map: YAMLMap = implementation if is_map(implementation) else {}
    timeout = impl_map.get("timeout", definition.get("timeout", inputs.get("timeout")))
    environment: YAMLValue = impl_map.get("environment")
    outputs = definition.get("outputs")
    return Operation(
        interface,
        name,
        impl,
        inputs,
        retry=retry,
        timeout=float(timeout) if isinstance(timeout, int | float) else None,
        environment=dict(environment) if isinstance(environment, dict) and environment else None,
        outputs={str(output): output_target(attribute) for output, attribute in outputs.items()}
        if is_map(outputs) and outputs else None,
    )
