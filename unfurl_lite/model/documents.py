"""The shapes of the YAML documents that cross layers, as typed dicts: an ensemble's spec
(service template, types, node templates), its recorded status (instance records), and
the job records Unfurl's formats keep (lastJob, a job's changes).

They are born where the YAML is parsed (``load/``) or written (``record/``), and read by
every layer above; they live here, under both, so the loader and the recorder name the
same keys the same way. They cost nothing at run time: a typed dict is a plain dict, so a
parsed document is declared one (``cast`` at the parser's edge), never converted, and
this module is imported for the type checker only (``if TYPE_CHECKING:``: making its
classes would add milliseconds to every command's start). Every
key is optional (``total=False``): the validator reports what is missing, by name, with
its line, and the readers above it fall back on each key's default. Values a user writes
freely (properties, attributes, inputs) stay ``YAMLMap``: any YAML under a string key.
"""

from __future__ import annotations

from typing import TypedDict

from unfurl_lite.model.narrow import YAMLList, YAMLMap


class ReadyState(TypedDict, total=False):
    """``readyState``: an instance's (or a job's, or a task's) operational status."""

    local: str
    state: str
    effective: str


class InstanceRecord(TypedDict, total=False):
    """An instance's record in ``status: instances:`` (nested ``instances`` are the ones
    it hosts, see :mod:`~unfurl_lite.model.status_layout`)."""

    template: str
    priority: str
    readyState: ReadyState | str
    attributes: YAMLMap
    created: str | bool | None
    lastStateChange: str | None
    lastConfigChange: str | None
    protected: bool
    requirements: list[dict[str, InstanceRecord]]
    instances: dict[str, InstanceRecord]
    hostedOn: str
    name: str


class StatusSection(TypedDict, total=False):
    """``status:``: the recorded instances, by name, and the topology's outputs."""

    instances: dict[str, InstanceRecord]
    outputs: YAMLMap
    inputs: YAMLMap


class _NodeDoc(TypedDict, total=False):
    """What a node type and a node template both declare (a template's values, a type's
    definitions)."""

    description: str
    metadata: YAMLMap
    properties: YAMLMap
    attributes: YAMLMap
    interfaces: YAMLMap
    requirements: YAMLList
    capabilities: YAMLMap
    artifacts: YAMLMap


class NodeTypeDoc(_NodeDoc, total=False):
    """A node (or relationship) type as written under ``node_types:``/``types:``."""

    derived_from: str | list[str]
    valid_target_types: list[str]


class NodeTemplateDoc(_NodeDoc, total=False):
    """A node template as written under ``node_templates:``."""

    type: str
    directives: list[str]
    imported: str


class TopologyTemplateDoc(TypedDict, total=False):
    """``topology_template:``."""

    description: str
    inputs: YAMLMap
    outputs: YAMLMap
    node_templates: dict[str, NodeTemplateDoc]
    relationship_templates: YAMLMap
    groups: YAMLMap
    policies: YAMLList
    workflows: YAMLMap
    root: YAMLMap
    substitution_mappings: YAMLMap


class ServiceTemplateDoc(TypedDict, total=False):
    """``spec: service_template:``: a TOSCA service template."""

    tosca_definitions_version: str
    description: str
    metadata: YAMLMap
    imports: YAMLList
    repositories: YAMLMap
    types: dict[str, NodeTypeDoc]
    node_types: dict[str, NodeTypeDoc]
    relationship_types: dict[str, NodeTypeDoc]
    capability_types: YAMLMap
    data_types: YAMLMap
    interface_types: YAMLMap
    artifact_types: YAMLMap
    topology_template: TopologyTemplateDoc


class SpecDoc(TypedDict, total=False):
    """``spec:``: what should exist."""

    service_template: ServiceTemplateDoc
    inputs: YAMLMap
    instances: YAMLMap


class JobEntry(TypedDict, total=False):
    """A job's own record: ``lastJob``, the first entry of its changes, jobs.tsv's line."""

    changeId: str
    previousId: str
    startTime: str
    endTime: str
    workflow: str
    options: YAMLMap
    summary: str
    startCommit: str
    endCommit: str
    specDigest: str
    readyState: ReadyState
    state: str
    changelog: str


class TaskEntry(TypedDict, total=False):
    """One task as a job file (or changes file) records it, in Unfurl's key order."""

    changeId: str
    previousId: str
    parentJob: str
    target: str
    priority: str
    readyState: ReadyState
    implementation: dict[str, str]
    reason: str
    inputs: YAMLMap
    result: YAMLMap
    dependencies: YAMLList
    digestKeys: str
    digestValue: str
    digestPut: str
    summary: str
    interface: str
    status: str | None
    state: str
    attempts: int
    worker: str | None


class EnsembleDoc(TypedDict, total=False):
    """An ensemble (``ensemble.yaml``) as parsed: its spec, status, and job records."""

    apiVersion: str
    kind: str
    metadata: YAMLMap
    spec: SpecDoc
    status: StatusSection
    lastJob: JobEntry
    jobsLog: str
    changes: list[TaskEntry | JobEntry]
    environment: YAMLMap
