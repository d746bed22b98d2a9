"""TOSCA's normative types (and Unfurl's own relationship types) as Unfurl 1.2.0's TOSCA 1.3
definitions declare them: the facts both the load's checks and the queries' instance graph
read, for a document that uses a type without declaring it. Plain tables, no imports: on a
cold plan's road."""

#: the requirements TOSCA's normative node types declare, as Unfurl 1.2.0's TOSCA 1.3
#: definitions do: name -> (relationship type, capability type)
NORMATIVE_REQUIREMENTS: dict[str, dict[str, tuple[str, str]]] = {
    "tosca.nodes.Root": {"dependency": ("tosca.relationships.DependsOn",
                                        "tosca.capabilities.Node")},
    "tosca.nodes.Compute": {"local_storage": ("tosca.relationships.AttachesTo",
                                              "tosca.capabilities.Attachment")},
    "tosca.nodes.SoftwareComponent": {"host": ("tosca.relationships.HostedOn",
                                               "tosca.capabilities.Compute")},
    "tosca.nodes.Database": {"host": ("tosca.relationships.HostedOn",
                                      "tosca.capabilities.Compute")},
    "tosca.nodes.WebApplication": {"host": ("tosca.relationships.HostedOn",
                                            "tosca.capabilities.Compute")},
    "tosca.nodes.network.Port": {
        "binding": ("tosca.relationships.network.BindsTo", "tosca.capabilities.network.Bindable"),
        "link": ("tosca.relationships.network.LinksTo", "tosca.capabilities.network.Linkable")},
    "tosca.nodes.LoadBalancer": {"application": ("tosca.relationships.RoutesTo",
                                                 "tosca.capabilities.Endpoint")},
    "tosca.nodes.Container.Application": {"host": ("tosca.relationships.HostedOn",
                                                   "tosca.capabilities.Container")},
}
#: normative (and Unfurl's) relationship types: parents, valid target capability types
NORMATIVE_RELATIONSHIPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "tosca.relationships.Root": ((), ()),
    "tosca.relationships.DependsOn": (("tosca.relationships.Root",), ()),
    "tosca.relationships.HostedOn": (("tosca.relationships.Root",), ()),
    "tosca.relationships.ConnectsTo": (("tosca.relationships.Root",),
                                       ("tosca.capabilities.Endpoint",)),
    "tosca.relationships.AttachesTo": (("tosca.relationships.Root",),
                                       ("tosca.capabilities.Attachment",)),
    "tosca.relationships.RoutesTo": (("tosca.relationships.ConnectsTo",),
                                     ("tosca.capabilities.Endpoint",)),
    "tosca.relationships.network.LinksTo": (("tosca.relationships.DependsOn",),
                                            ("tosca.capabilities.network.Linkable",)),
    "tosca.relationships.network.BindsTo": (("tosca.relationships.DependsOn",),
                                            ("tosca.capabilities.network.Bindable",)),
    "unfurl.relationships.Configures": (("tosca.relationships.Root",), ()),
    "unfurl.relationships.ConfiguringHostedOn": (
        ("unfurl.relationships.Configures", "tosca.relationships.HostedOn"), ()),
    "unfurl.relationships.InstalledBy": (("tosca.relationships.Root",),
                                         ("unfurl.capabilities.Installer",)),
}

#: the names of the types other than node types that Unfurl 1.2.0 defines without an import
#: (its TOSCA 1.3 definitions, tosca-ext.yaml, and tosca-parser's built-in property types),
#: by kind: a document that uses another name must define it (load/undefined_types.py)
DEFINED_TYPE_NAMES: dict[str, frozenset[str]] = {
    "relationship": frozenset((
        *NORMATIVE_RELATIONSHIPS,
        *(f"unfurl.relationships.ConnectsTo.{n}" for n in (
            "Ansible", "ComputeMachines", "CloudAccount", "GoogleCloudProject", "AWSAccount",
            "DigitalOcean", "Azure", "Packet", "OpenStack", "Rackspace")))),
    "capability": frozenset((
        *(f"tosca.capabilities.{n}" for n in (
            "Root", "Node", "Container", "Storage", "Compute", "Endpoint", "Endpoint.Admin",
            "Endpoint.Public", "Scalable", "Endpoint.Database", "Attachment",
            "network.Linkable", "network.Bindable", "OperatingSystem", "Container.Docker")),
        "unfurl.capabilities.Installer", "unfurl.capabilities.Endpoint.Ansible",
        "unfurl.capabilities.Endpoint.SSH")),
    "data": frozenset((
        "integer", "string", "boolean", "float", "range", "number", "timestamp", "list",
        "map", "scalar-unit.size", "scalar-unit.frequency", "scalar-unit.time",
        "scalar-unit.bitrate", "version", "PortDef", "PortSpec", "any",
        *(f"tosca.datatypes.{n}" for n in (
            "Root", "network.NetworkInfo", "network.PortInfo", "network.PortDef",
            "network.PortSpec", "Credential", "json", "xml")),
        "unfurl.datatypes.EnvVar", "unfurl.datatypes.EnvironmentVariables")),
    "interface": frozenset((
        "tosca.interfaces.Root", "tosca.interfaces.node.lifecycle.Standard",
        "tosca.interfaces.relationship.Configure", "unfurl.interfaces.Install", "Mock")),
}

#: the properties TOSCA's normative relationship types declare (Unfurl 1.2.0's TOSCA 1.3
#: definitions): name -> whether a template must give it (required, no default)
NORMATIVE_RELATIONSHIP_PROPERTIES: dict[str, dict[str, bool]] = {
    "tosca.relationships.ConnectsTo": {"credential": False},
    "tosca.relationships.AttachesTo": {"location": True, "device": False},
}

#: the property definitions of TOSCA's normative node types (and Unfurl's Repository) that
#: say what a value must be, as Unfurl 1.2.0's definitions give them: a template's value
#: is judged against them at validate (load/value_checks.py); inherited ones are found
#: through the types' parents (model/lineage.py's NORMATIVE_PROPERTIES)
NORMATIVE_PROPERTY_TYPES: dict[str, dict[str, dict[str, object]]] = {
    "tosca.nodes.Abstract.Storage": {
        "name": {"type": "string"},
        "size": {"type": "scalar-unit.size", "constraints": [{"greater_or_equal": "0 MB"}]}},
    "tosca.nodes.Storage.BlockStorage": {"volume_id": {"type": "string"},
                                         "snapshot_id": {"type": "string"}},
    "tosca.nodes.BlockStorage": {"name": {"type": "string"}},
    "tosca.nodes.Storage.ObjectStorage": {
        "maxsize": {"type": "scalar-unit.size", "constraints": [{"greater_or_equal": "0 GB"}]}},
    "tosca.nodes.SoftwareComponent": {
        "component_version": {"type": "version"},
        "admin_credential": {"type": "tosca.datatypes.Credential"}},
    "tosca.nodes.DBMS": {"port": {"type": "integer"}, "root_password": {"type": "string"}},
    "tosca.nodes.Database": {"user": {"type": "string"}, "port": {"type": "integer"},
                             "name": {"type": "string"}, "password": {"type": "string"}},
    "tosca.nodes.WebApplication": {"context_root": {"type": "string"}},
    "tosca.nodes.network.Network": {
        "ip_version": {"type": "integer", "constraints": [{"valid_values": [4, 6]}]},
        **{name: {"type": "string"} for name in (
            "cidr", "start_ip", "end_ip", "gateway_ip", "network_name", "network_id",
            "segmentation_id", "network_type", "physical_network")},
        "dhcp_enabled": {"type": "boolean"}},
    "tosca.nodes.network.Port": {
        "ip_address": {"type": "string"},
        "order": {"type": "integer", "constraints": [{"greater_or_equal": 0}]},
        "is_default": {"type": "boolean"}, "ip_range_start": {"type": "string"},
        "ip_range_end": {"type": "string"}},
    "tosca.nodes.network.FloatingIP": {name: {"type": "string"} for name in (
        "floating_network", "floating_ip_address", "port_id")},
    "tosca.nodes.ObjectStorage": {
        "name": {"type": "string"},
        "size": {"type": "scalar-unit.size", "constraints": [{"greater_or_equal": "0 GB"}]},
        "maxsize": {"type": "scalar-unit.size", "constraints": [{"greater_or_equal": "0 GB"}]}},
    "tosca.nodes.LoadBalancer": {"algorithm": {"type": "string"}},
    "unfurl.nodes.Repository": {"repository": {"type": "string"}, "url": {"type": "string"},
                                "credential": {"type": "tosca.datatypes.Credential"}},
}

#: the property definitions of TOSCA's normative capability types that say what a value
#: must be (Unfurl 1.2.0's TOSCA 1.3 definitions): a template's capability assignment is
#: judged against them at validate, an ancestor's through the capability types' parents
#: (load/type_tables.py: CAPABILITY_TYPES, Types.capability_definitions);
#: tests/data/unfurl120/58-capability-values
NORMATIVE_CAPABILITY_PROPERTY_TYPES: dict[str, dict[str, dict[str, object]]] = {
    "tosca.capabilities.Storage": {"name": {"type": "string"}},
    "tosca.capabilities.Compute": {
        "name": {"type": "string"},
        "num_cpus": {"type": "integer", "constraints": [{"greater_or_equal": 1}]},
        "cpu_frequency": {"type": "scalar-unit.frequency",
                          "constraints": [{"greater_or_equal": "0.1 GHz"}]},
        "disk_size": {"type": "scalar-unit.size", "constraints": [{"greater_or_equal": "0 MB"}]},
        "mem_size": {"type": "scalar-unit.size", "constraints": [{"greater_or_equal": "0 MB"}]}},
    "tosca.capabilities.Endpoint": {
        "protocol": {"type": "string"}, "port": {"type": "tosca.datatypes.network.PortDef"},
        "secure": {"type": "boolean"}, "url_path": {"type": "string"},
        "port_name": {"type": "string"}, "network_name": {"type": "string"},
        "initiator": {"type": "string",
                      "constraints": [{"valid_values": ["source", "target", "peer"]}]},
        "ports": {"type": "map", "constraints": [{"min_length": 1}],
                  "entry_schema": {"type": "tosca.datatypes.network.PortSpec"}}},
    "tosca.capabilities.Endpoint.Admin": {
        "secure": {"type": "boolean", "constraints": [{"equal": True}]}},
    "tosca.capabilities.Endpoint.Public": {
        "network_name": {"type": "string", "constraints": [{"equal": "PUBLIC"}]},
        "floating": {"type": "boolean"}, "dns_name": {"type": "string"}},
    "tosca.capabilities.Scalable": {"min_instances": {"type": "integer"},
                                    "max_instances": {"type": "integer"},
                                    "default_instances": {"type": "integer"}},
    "tosca.capabilities.OperatingSystem": {
        **{name: {"type": "string"} for name in ("architecture", "type", "distribution")},
        "version": {"type": "version"}},
    "tosca.capabilities.Container.Docker": {
        "version": {"type": "list", "entry_schema": {"type": "version"}},
        "publish_all": {"type": "boolean"},
        "publish_ports": {"type": "list",
                          "entry_schema": {"type": "tosca.datatypes.network.PortSpec"}},
        "expose_ports": {"type": "list",
                         "entry_schema": {"type": "tosca.datatypes.network.PortSpec"}},
        "volumes": {"type": "list", "entry_schema": {"type": "string"}}},
}

#: the requirements TOSCA's normative node types declare that a template must satisfy
#: (no ``occurrences`` starting at 0), as Unfurl 1.2.0's TOSCA 1.3 definitions declare
#: them: matched as a type's own are (load/structure.py), and "missing" when nothing matches
#: ("Node template app is missing requirements: host"; unfurl-cases 489)
NORMATIVE_REQUIRED_REQUIREMENTS: dict[str, dict[str, dict[str, str]]] = {
    "tosca.nodes.Database": {"host": {
        "node": "tosca.nodes.DBMS", "capability": "tosca.capabilities.Compute",
        "relationship": "tosca.relationships.HostedOn"}},
    "tosca.nodes.WebApplication": {"host": {
        "node": "tosca.nodes.WebServer", "capability": "tosca.capabilities.Compute",
        "relationship": "tosca.relationships.HostedOn"}},
    "tosca.nodes.network.Port": {
        "binding": {"node": "tosca.nodes.Compute",
                    "capability": "tosca.capabilities.network.Bindable",
                    "relationship": "tosca.relationships.network.BindsTo"},
        "link": {"node": "tosca.nodes.network.Network",
                 "capability": "tosca.capabilities.network.Linkable",
                 "relationship": "tosca.relationships.network.LinksTo"}},
    "tosca.nodes.network.FloatingIP": {"link": {
        "node": "tosca.nodes.network.Port", "capability": "tosca.capabilities.network.Linkable",
        "relationship": "tosca.relationships.network.LinksTo"}},
    "tosca.nodes.Container.Application": {
        "host": {"node": "tosca.nodes.Container.Runtime",
                 "capability": "tosca.capabilities.Container",
                 "relationship": "tosca.relationships.HostedOn"},
        "storage": {"capability": "tosca.capabilities.Storage"},
        "network": {"capability": "tosca.capabilities.Endpoint"}},
    "tosca.nodes.Container.Application.Docker": {"host": {
        "capability": "tosca.capabilities.Container.Docker"}},
}
