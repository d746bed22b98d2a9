"""Each built-in workflow declared once: its name, its planner, its typed parameters with
their help, how the CLI spells it, and whether it changes the instances' history.

Everything else is derived from this table: the CLI's commands and options, the names
``-p``/``--parameters`` accepts and how their values are read, which options a planner
takes (:class:`~unfurl_lite.run.options.PlanOptions`), the planner registry, and the names
a TOSCA workflow may not take. Adding a parameter means declaring it here and taking it in
its planner; CONTRIBUTING.md says how.

Pure data, and cheap: ``unfurl --help`` reads it without importing a planner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from unfurl_lite.model.narrow import new_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

#: how a parameter's value is typed, read from ``-p NAME=VALUE`` and offered as an option:
#: flag (true/false), text, integer, names (a list; ``a,b`` on the command line),
#: mapping (a JSON object on the command line), argv (the words after ``--``)
Kind: TypeAlias = 'Literal["flag", "text", "integer", "names", "mapping", "argv"]'

#: Unfurl's and Cloudify's origins: which project's rules a workflow follows
Origin: TypeAlias = 'Literal["unfurl", "cloudify"]'


@dataclass(frozen=True)
class Parameter:
    """One option of a workflow's planner, by its planner's (and Cloudify's) name."""

    name: str
    kind: Kind
    help: str
    #: what the planner does when it is not given (shown by --help); None: nothing is shown
    default: Any = None
    #: the CLI's option, e.g. ``--delta``; "" spells it from the name (dashes for
    #: underscores), None offers no option (``-p``, a positional argument, or the API only)
    option: str | None = ""
    #: a positional argument that gives it too (its metavar, e.g. TEMPLATE)
    argument: str | None = None
    #: the job cannot be planned without it (the CLI says how to give it)
    required: bool = False
    #: one of Cloudify's parameters: ``-p``/``--parameters`` accept it by this name
    cloudify: bool = True
    #: the option's metavar on the command line (default: its type's)
    metavar: str | None = None
    #: it selects the instances the workflow acts on (instead of ``--instance``)
    selects: bool = False
    #: set, the job only shows its plan and runs nothing (update's preview)
    shows_only: bool = False
    #: it names one of these workflows (by a command's spelling) to run instead
    runs_instead: tuple[str, ...] = ()
    #: Unfurl records it in ``lastJob.options`` under this name when it is set
    recorded_as: str | None = None
    #: the values a text parameter may take (the planner refuses any other)
    choices: tuple[str, ...] = ()
    #: other spellings of its option (Unfurl's, e.g. ``--destroyunmanaged``)
    aliases: tuple[str, ...] = ()
    #: the planners' word for it where the user's (Cloudify's) name is not theirs: the
    #: planners of several workflows then share one meaning under one name, and the
    #: user's spelling has this declaration as its only home
    keyword: str | None = None

    @property
    def flag(self) -> str | None:
        """The option as the command line spells it, or None."""
        if self.option is None:
            return None
        return self.option or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class BuiltinWorkflow:
    """A built-in workflow, and everything a layer above needs to know of it."""

    name: str  # as planned, journaled and recorded
    planner: str  # "module:function" of unfurl_lite.plan
    summary: str  # one line, for `unfurl --help`
    help: str  # the command's own help
    origin: Origin
    parameters: tuple[Parameter, ...] = ()
    #: the CLI's commands for it, each with the parameters that spelling implies
    #: (Cloudify's ``uninstall`` deletes what has no delete operation)
    commands: Mapping[str, Mapping[str, Any]] = field(default_factory=new_dict)
    #: its tasks write the instances' change history (an ad hoc ``run`` does not)
    changes_history: bool = True
    #: it only looks (check, discover): nothing to approve before it runs
    read_only: bool = False
    #: its operations' output is what the user asked for: the CLI prints it
    shows_output: bool = False
    #: a TOSCA workflow of the same name may replace it (deploy and undeploy)
    replaceable: bool = False
    #: its ensemble may be given as the command's argument, as Unfurl's commands take it
    ensemble_argument: bool = False

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def planner_keywords(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` (by the parameters' names) as its planner takes them."""
        renamed = {p.name: p.keyword for p in self.parameters if p.keyword}
        return {renamed.get(name, name): value for name, value in given.items()}

    @property
    def planner_takes(self) -> tuple[str, ...]:
        """Its planner's keywords, in declaration order."""
        return tuple(p.keyword or p.name for p in self.parameters)

    @property
    def takes(self) -> tuple[str, ...]:
        """The names its planner takes, in declaration order."""
        return tuple(p.name for p in self.parameters)

    @property
    def cloudify_names(self) -> tuple[str, ...]:
        """What ``-p``/``--parameters`` accept for it."""
        return tuple(p.name for p in self.parameters if p.cloudify)

    @property
    def takes_cloudify_parameters(self) -> bool:
        """Whether its command offers ``-p``/``--parameters`` at all."""
        return self.origin == "cloudify" or self.name in ("deploy", "undeploy")


#: the CLI spells it -i/--instance, an option every job command has
INSTANCES = Parameter(
    "instance_names", "names", "Limit the job to these instances and what they need.",
    option=None, cloudify=False, recorded_as="instances")
TYPE_NAMES = Parameter("type_names", "names",
                       "Only instances of these types or their subtypes (repeatable, or a,b).",
                       selects=True)
NODE_IDS = Parameter("node_ids", "names", "Only instances of these node templates.",
                     selects=True)
NODE_INSTANCE_IDS = Parameter("node_instance_ids", "names", "Only these instances.",
                              selects=True)
FILTERS = (TYPE_NAMES, NODE_IDS, NODE_INSTANCE_IDS)
#: Unfurl's --template, which every Unfurl workflow takes
TEMPLATE = Parameter("template", "text", "Limit the job to this template's instances (and, "
                     "but for undeploy, what they require).", metavar="NAME", cloudify=False)
#: Unfurl's --destroyunmanaged is its spelling of --destroy-discovered
DESTROY_DISCOVERED = Parameter(
    "destroy_discovered", "flag",
    "Also delete instances that were discovered rather than created (deploy: with --prune).",
    default=False, cloudify=False, recorded_as="destroy_discovered",
    aliases=("--destroyunmanaged",))
#: deploy's and undeploy's --force (each says what it forces), recorded as Unfurl does
FORCE = Parameter("force", "flag", "Run operations even on instances already ok.",
                  default=False, cloudify=False, recorded_as="force")
IN_ORDER = Parameter("run_by_dependency_order", "flag",
                     "Keep dependency order (otherwise all in parallel).", default=True)


def _start_or_stop(name: str, order: str) -> BuiltinWorkflow:
    return BuiltinWorkflow(
        name, f"operations:plan_{name}", f"{name.capitalize()} instances, {order} first.",
        f"Run cloudify.interfaces.lifecycle.{name} (or Standard.{name}) on the selected "
        f"instances, {order} first.", "cloudify",
        (Parameter("operation_parms", "mapping", "JSON object of inputs (operation_kwargs)."),
         IN_ORDER, *FILTERS),
        commands={name: {}}, ensemble_argument=True)  # `unfurl stop [ENSEMBLE]`, as Unfurl


WORKFLOWS: tuple[BuiltinWorkflow, ...] = (
    BuiltinWorkflow(
        "deploy", "deploy:plan_deploy", "Create, configure and start what the spec describes.",
        "Deploy the ensemble: create, configure and start every instance not yet ok.",
        "unfurl",
        (INSTANCES,
         FORCE,
         Parameter("start_without_operation", "flag",
                   "Every instance ends started, a step with no operation included "
                   "(Cloudify's install).", default=False, option=None, cloudify=False),
         TEMPLATE,
         Parameter("check", "flag", "Check whether new instances exist before deploying "
                   "them: create only what the check does not find.", default=False,
                   cloudify=False),
         Parameter("repair", "text", "Re-run operations on instances that are in error "
                   "(error), degraded too (degraded), only on missing ones (missing), or on "
                   "none.", default="error", cloudify=False,
                   choices=("error", "degraded", "missing", "none")),
         Parameter("skip_new", "flag", "Create no instance for templates that have none yet.",
                   default=False, cloudify=False),
         Parameter("change_detection", "text", "When to reconfigure a deployed instance: "
                   "never (skip), when what its configure read changed (spec, evaluate), "
                   "even when it was customized (always).", default="evaluate",
                   cloudify=False, choices=("skip", "spec", "evaluate", "always")),
         Parameter("prune", "flag", "Delete the recorded instances this job does not plan "
                   "for (their template was removed, or --template left them out).",
                   default=False, cloudify=False),
         Parameter("upgrade", "flag", "Apply major version changes (as in Unfurl 1.2.0: "
                   "recorded, nothing more).", default=False, cloudify=False),
         DESTROY_DISCOVERED),
        commands={"deploy": {}, "install": {"start_without_operation": True}},
        replaceable=True, ensemble_argument=True),
    BuiltinWorkflow(
        "undeploy", "deploy:plan_undeploy", "Stop and delete what was deployed.",
        "Undeploy: stop and delete instances in reverse dependency order.", "unfurl",
        (INSTANCES,
         DESTROY_DISCOVERED,
         Parameter("ignore_failure", "flag",
                   "Go on past failing instances (Cloudify's uninstall).", default=False,
                   keyword="may_fail"),
         Parameter("delete_without_operation", "flag",
                   "Forget instances that have no delete operation (Cloudify's uninstall).",
                   default=False, option=None, cloudify=False),
         replace(FORCE, help="Delete even what a kept instance (protected, or required "
                 "by one that stays) still needs."),
         TEMPLATE),
        commands={"undeploy": {}, "teardown": {},  # teardown: Unfurl's other name for it
                  "uninstall": {"delete_without_operation": True}},
        replaceable=True, ensemble_argument=True),
    BuiltinWorkflow(
        "check", "deploy:plan_check", "Check the live status of instances.",
        "Run each instance's check operation and record what it finds (changes nothing "
        "live).", "unfurl", (INSTANCES, TEMPLATE), commands={"check": {}}, read_only=True,
        ensemble_argument=True),
    BuiltinWorkflow(
        "discover", "deploy:plan_discover", "Discover instances and their attributes.",
        "Run each instance's discover operation: record attributes and found instances.",
        "unfurl", (INSTANCES, TEMPLATE), commands={"discover": {}}, read_only=True,
        ensemble_argument=True),
    BuiltinWorkflow(
        "run", "operations:plan_run", "Run a command or an operation on instances.",
        "Run an ad hoc COMMAND (after --), an --operation, or a custom --workflow on the "
        "selected instances.\n\nExample: unfurl run --instance app -- echo hello", "unfurl",
        (INSTANCES,
         Parameter("command", "argv", "The command to run, after --.", option=None,
                   argument="COMMAND", cloudify=False),
         Parameter("operation", "text", "Run this operation (e.g. configure, Install.check).",
                   cloudify=False, recorded_as="operation"),
         Parameter("inputs", "mapping", "Inputs given to the operation.", option=None,
                   cloudify=False)),
        commands={"run": {}}, changes_history=False, shows_output=True),
    BuiltinWorkflow(
        "execute_operation", "operations:plan_execute_operation",
        "Run one operation on the instances the filters select.",
        "Run OPERATION (e.g. cloudify.interfaces.lifecycle.start, Standard.configure) on every "
        "instance the filters select (filters combine as an intersection), created or not.",
        "cloudify",
        (Parameter("operation", "text", "The operation to run.", option=None,
                   argument="OPERATION", required=True),
         Parameter("operation_kwargs", "mapping", "JSON object of inputs for the operation."),
         Parameter("allow_kwargs_override", "flag",
                   "May --operation-kwargs replace inputs the operation defines (default: no, "
                   "as Cloudify: a duplicate is an error)."),
         Parameter("run_by_dependency_order", "flag",
                   "Run on an instance only after the instances it depends on.",
                   default=False),
         *FILTERS),
        commands={"execute-operation": {}}),
    _start_or_stop("start", "dependencies"),
    _start_or_stop("stop", "dependents"),
    BuiltinWorkflow(
        "restart", "operations:plan_restart", "Stop all, then start all.",
        "Stop every selected instance (dependents first), then start them all.", "cloudify",
        (Parameter("stop_parms", "mapping", "JSON inputs for the stop operations."),
         Parameter("start_parms", "mapping", "JSON inputs for the start operations."),
         IN_ORDER, *FILTERS),
        commands={"restart": {}}),
    BuiltinWorkflow(
        "heal", "heal:plan_heal", "Heal or reinstall a failing instance.",
        "Heal INSTANCE and everything on the same host (all instances if omitted).",
        "cloudify",
        (Parameter("node_instance_id", "text", "The instance to heal.", option=None,
                   argument="INSTANCE"),
         Parameter("diagnose_value", "text", "Why you are healing (shown in the plan)."),
         Parameter("ignore_failure", "flag",
                   "Go on past failures in the uninstall part of a reinstall.", default=True,
                   keyword="may_fail"),
         Parameter("check_status", "flag",
                   "Run check_status first; healthy instances are left alone.", default=True),
         Parameter("allow_reinstall", "flag",
                   "Reinstall what heal operations cannot fix (else fail).", default=True),
         Parameter("force_reinstall", "flag", "Skip check and heal: reinstall.",
                   default=False, keyword="always_reinstall")),
        commands={"heal": {}}),
    BuiltinWorkflow(
        "scale", "scale:plan_scale", "Add or remove instances of a template.",
        "Scale TEMPLATE (a node template or scaling group) out or in by --delta instances.",
        "cloudify",
        (Parameter("scalable_entity_name", "text", "The template or group to scale.",
                   option=None, argument="TEMPLATE", required=True),
         Parameter("delta", "integer", "Instances to add (<0: remove).", default=1),
         Parameter("scale_compute", "flag", "Scale the host along with what it hosts.",
                   default=False),
         Parameter("include_instances", "names", "Remove these first (scale in)."),
         Parameter("exclude_instances", "names", "Never remove these (scale in)."),
         Parameter("rollback_if_failed", "flag", "Uninstall what a failed scale-out created.",
                   default=True)),
        commands={"scale": {}}),
    BuiltinWorkflow(
        "update", "update:plan_update", "Apply spec changes to what was deployed.",
        "Bring what was deployed in line with the spec, changing as little as it can.",
        "cloudify",
        (Parameter("preview", "flag", "Print the update's steps; run nothing.", default=False,
                   shows_only=True),
         Parameter("skip_install", "flag", "Do not install instances of new templates.",
                   default=False),
         Parameter("skip_uninstall", "flag", "Do not remove instances of removed templates.",
                   default=False),
         Parameter("skip_reinstall", "flag", "Never reinstall changed instances.",
                   default=False),
         Parameter("skip_drift_check", "flag", "Do not run check_drift operations.",
                   default=False),
         Parameter("force_reinstall", "flag", "Reinstall changed instances, never update.",
                   default=False, keyword="always_reinstall"),
         Parameter("skip_heal", "flag", "Do not check_status (and reinstall if unhealthy) "
                   "instances before updating them.", default=False),
         Parameter("workflow_id", "text", "Run this workflow (install, uninstall, heal, start, "
                   "stop, restart, check, discover) instead of the update steps.",
                   metavar="WORKFLOW", runs_instead=(
                       "deploy", "undeploy", "heal", "start", "stop", "restart", "check",
                       "discover"))),
        commands={"update": {}}),
    BuiltinWorkflow(
        "install_new_agents", "operations:plan_install_new_agents",
        "Make sure a live worker serves each instance's agent queue.",
        "Make sure a live worker serves each selected instance's agent queue: register the "
        "one already serving it (checking its version) or start one; old ones keep running. "
        "The broker is --broker or UNFURL_BROKER.", "cloudify",
        (Parameter("install_agent_timeout", "text",
                   "How long to wait for each agent's worker to come up (seconds, or 300s, "
                   "5m).", default="300s"),
         NODE_IDS, NODE_INSTANCE_IDS),
        commands={"install-new-agents": {}}, shows_output=True),
)

BY_NAME: dict[str, BuiltinWorkflow] = {w.name: w for w in WORKFLOWS}
#: every parameter any workflow takes, by name (one name means one thing everywhere)
PARAMETERS: dict[str, Parameter] = {p.name: p for w in WORKFLOWS for p in w.parameters}
#: a custom (TOSCA) workflow's planner takes these
CUSTOM_TAKES = ("instance_names",)
#: built-in names a TOSCA workflow may not take (its own rules apply to each)
RESERVED: tuple[str, ...] = tuple(dict.fromkeys(
    spelled for w in WORKFLOWS
    for spelled in (() if w.replaceable else (w.name,)) + tuple(
        c for c in w.commands if c != w.name or not w.replaceable)))
REPLACEABLE: tuple[str, ...] = tuple(w.name for w in WORKFLOWS if w.replaceable)


def workflow_of_command(command: str) -> BuiltinWorkflow | None:
    """The workflow a CLI command runs (``install`` -> deploy)."""
    return next((w for w in WORKFLOWS if command in w.commands), None)
