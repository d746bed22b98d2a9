"""digestKeys and digestValue as Unfurl 1.2.0 records them: the inputs the operation
resolved (those its environment read first), never the ones Unfurl leaves out, then what
it read beyond its inputs (``::root::inputs``, ``::svc::greeting``). The expected values
are Unfurl's own, from tests/data/unfurl-cases/*/expected/deploy.jobs.tsv."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.conftest import ENSEMBLE_HEAD, ensemble_yaml


def _row(project, operation: str) -> dict[str, str]:
    for line in project.jobs_tsv()[1:]:
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if fields.get("operation") == operation:
            return fields
    raise AssertionError(f"no {operation} row in jobs.tsv")


def _with_types(types: str, inputs: str, nodes: str) -> str:
    head = ENSEMBLE_HEAD.replace("    topology_template:\n",
                                 textwrap.indent(textwrap.dedent(types), " " * 4)
                                 + "    topology_template:\n"
                                 + textwrap.indent(textwrap.dedent(inputs), " " * 6))
    return head + textwrap.indent(textwrap.dedent(nodes), " " * 8)


SHELL_EXAMPLE = ensemble_yaml("""\
test1:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      create:
        implementation:
          className: unfurl.configurators.shell.ShellConfigurator
          environment:
            FOO: "{{inputs.foo}}"
        inputs:
          command: "echo ${{inputs.envvar}}"
          timeout: 9999
          foo: helloworld
          envvar: FOO
          resultTemplate: |
            - name: SELF
              attributes:
                stdout: "{{ stdout | trim }}"
""")


def test_keys_list_what_the_environment_read_first_and_leave_out_unread_inputs(project, invoke):
    """Unfurl's tests/examples/shell-ensemble.yaml (case 01-example-shell)."""
    project.write(SHELL_EXAMPLE)
    assert invoke("deploy", "--approve").exit_code == 0
    row = _row(project, "create")
    assert row["digestKeys"] == "foo,command,envvar"
    assert row["digestValue"] == "c3d080d8e35ed1afea4f007f211fb9b4ed0cc3d3"


SELF_PROPERTIES = _with_types(
    """\
    node_types:
      acme.Service:
        derived_from: tosca.nodes.Root
        properties:
          greeting: {type: string}
          plain: {type: string}
    """,
    """\
    inputs:
      env_name: {type: string, default: staging}
    """,
    """\
    svc:
      type: acme.Service
      properties:
        greeting: {eval: {concat: ["hello ", {get_input: env_name}]}}
        plain: world
      interfaces:
        Standard:
          create:
            implementation: Shell
            inputs:
              command: "echo '{{ SELF.greeting }} {{ SELF.plain }}'"
              resultTemplate:
                attributes:
                  out: "{{ stdout | trim }}"
    """,
)


def test_values_read_through_self_and_get_input_join_the_digest(project, invoke):
    """Case 30-self-properties: Unfurl adds ``::root::inputs`` (the property's get_input)
    before ``::svc::greeting`` and ``::svc::plain``; its digestValue hashes them too."""
    project.write(SELF_PROPERTIES)
    assert invoke("deploy", "--approve").exit_code == 0
    row = _row(project, "create")
    assert row["digestKeys"] == "command,::root::inputs,::svc::greeting,::svc::plain"
    assert row["digestValue"] == "a8b053125540a6cd86fc2f93d97174b2d725a6c4"
    job = next((project.root / "jobs").glob("job*.yaml")).read_text()
    assert "ref: ::svc::greeting" in job and "expected: hello staging" in job


INPUTS_EXPRESSIONS = _with_types(
    """\
    node_types:
      acme.Cluster:
        derived_from: tosca.nodes.Root
        properties:
          label: {type: string}
    """,
    """\
    inputs:
      region: {type: string, default: eu-west}
      size: {type: integer, default: 3}
    """,
    """\
    cluster:
      type: acme.Cluster
      properties:
        label: {concat: [{get_input: region}, "-", "c1"]}
      interfaces:
        Standard:
          create:
            implementation: Shell
            inputs:
              name: {get_property: [SELF, label]}
              count: {get_input: size}
              command: "echo {{ inputs.name }} {{ inputs.count }}"
    """,
)


def test_get_property_reads_no_instance_value_but_get_input_reads_the_root(project, invoke):
    """Case 23-inputs-expressions: inputs in their declared order, then ``::root::inputs``;
    ``get_property`` adds no ``::cluster::label`` (as in Unfurl)."""
    project.write(INPUTS_EXPRESSIONS)
    assert invoke("deploy", "--approve").exit_code == 0
    row = _row(project, "create")
    assert row["digestKeys"] == "name,count,command,::root::inputs"
    assert row["digestValue"] == "eac4908741169e849716a600e647efb6fd56fbaa"


def _logged(level: str, extra_input: str = "") -> str:
    return _with_types(
        """\
        node_types:
          acme.Logged:
            derived_from: tosca.nodes.Root
            properties:
              level: {type: string}
        """,
        "",
        f"""\
        envy:
          type: acme.Logged
          properties:
            level: {level}
          interfaces:
            Standard:
              configure:
                implementation:
                  className: Shell
                  environment:
                    LOG_LEVEL: "{{{{ SELF.level }}}}"
                inputs:
                  command: 'echo "$LOG_LEVEL"'{extra_input}
        """,
    )


def _edit(project, old: str, new: str) -> None:
    """Change the spec in place, keeping the status the deploy recorded."""
    text = project.ensemble.read_text()
    assert old in text
    project.write(text.replace(old, new))


def test_a_property_read_only_by_the_environment_is_a_digest_key(project, invoke):
    """Case 32-implementation-environment."""
    project.write(_logged("debug"))
    assert invoke("deploy", "--approve").exit_code == 0
    assert _row(project, "configure")["digestKeys"] == "command,::envy::level"


def test_a_changed_property_the_operation_read_reconfigures_and_plan_says_which(
    project, invoke
):
    project.write(_logged("debug"))
    assert invoke("deploy", "--approve").exit_code == 0
    _edit(project, "level: debug", "level: info")
    plan = invoke("plan")
    assert plan.exit_code == 0
    assert "reconfigure" in plan.output and "::envy::level" in plan.output
    assert invoke("deploy", "--approve").exit_code == 0
    rows = [line for line in project.jobs_tsv() if "operation=configure" in line]
    assert len(rows) == 2


def test_an_input_the_operation_never_reads_changes_nothing(project, invoke):
    project.write(_logged("debug", "\n" + " " * 18 + "unused: one"))
    assert invoke("deploy", "--approve").exit_code == 0
    assert _row(project, "configure")["digestKeys"] == "command,::envy::level"
    _edit(project, "unused: one", "unused: two")
    assert "reconfigure" not in invoke("plan").output
    commits = len(project.commits())
    assert invoke("deploy", "--approve").exit_code == 0
    assert len(project.commits()) == commits


SECRET_READ = _with_types(
    """\
    node_types:
      acme.Db:
        derived_from: tosca.nodes.Root
        properties:
          password: {type: string, metadata: {sensitive: true}}
          user: {type: string}
    """,
    "",
    """\
    db:
      type: acme.Db
      properties:
        password: s3cr3t-value
        user: admin
      interfaces:
        Standard:
          configure:
            implementation:
              className: Shell
              environment:
                DB_PASSWORD: "{{ SELF.password }}"
            inputs:
              command: "echo {{ SELF.user }}"
    """,
)


def test_a_secret_read_takes_no_part_and_is_never_recorded(project, invoke):
    """Unfurl leaves a sensitive value out of digestKeys (and so of the digest)."""
    project.write(SECRET_READ)
    assert invoke("deploy", "--approve").exit_code == 0
    assert _row(project, "configure")["digestKeys"] == "command,::db::user"
    records = "".join(p.read_text() for p in (project.root / "jobs").glob("*.yaml"))
    assert "s3cr3t-value" not in records and "::db::password" not in records


def _secret_then(order: list[str]) -> str:
    """A Template whose resultTemplate sets SELF's sensitive ``secret`` and reads the
    inputs ``ports`` and ``plain`` (both templates naming SELF), in ``order``."""
    attributes = {"secret": "secret: bar", "ports": "n: '{{ inputs.ports | length }}'",
                  "plain": "m: '{{ inputs.plain }}'"}
    lines = "".join(f"\n                      {attributes[name]}" for name in order)
    return _with_types("""\
        node_types:
          T:
            derived_from: tosca.nodes.Root
            properties:
              secret: {type: string, metadata: {sensitive: true}}
              ports: {type: list}
              plain: {type: string}
        """, "", """\
        a:
          type: T
          properties: {secret: foo, ports: [1, 2], plain: hello}
          interfaces:
            Standard:
              create:
                implementation: Template
                inputs:
                  ports: "{{ SELF['ports'] }}"
                  plain: "{{ SELF.plain }}"
                  resultTemplate:
                    attributes:""" + lines + "\n")


def _status(project) -> str:
    return (project.root / "ensemble.yaml").read_text().split("\nstatus:", 1)[1]


def test_an_input_naming_an_instance_after_its_secret_was_set_is_secret(project, invoke):
    """Unfurl marks a template's result sensitive when the instance map it names holds a
    resolved secret (unfurl-cases 201, 258): an input rendered after the resultTemplate
    set SELF's sensitive attribute is left out of digestKeys and its text is redacted;
    what is computed from it (``| length``) is not."""
    project.write(_secret_then(["secret", "ports", "plain"]))
    assert invoke("deploy", "--approve").exit_code == 0
    assert _row(project, "create")["digestKeys"] == "::a::ports,::a::plain"
    status = _status(project)
    assert "n: 2" in status and "m: <<REDACTED>>" in status and "hello" not in status


def test_an_input_rendered_before_the_secret_was_set_stays_plain(project, invoke):
    project.write(_secret_then(["ports", "secret", "plain"]))
    assert invoke("deploy", "--approve").exit_code == 0
    assert _row(project, "create")["digestKeys"] == "ports,::a::ports,::a::plain"


def test_a_secret_read_by_an_earlier_input_makes_a_later_one_secret(project, invoke):
    """As Unfurl (unfurl-cases 258, db2): ``command`` reads ``pw``, which reads the
    sensitive password, so ``command`` and ``other`` (read by the resultTemplate after the
    run), which name SELF after it, are secret; the environment's read of it
    (SECRET_READ above) does not count."""
    project.write(SECRET_READ.split("        db:\n")[0] + textwrap.indent(textwrap.dedent("""\
        db:
          type: acme.Db
          properties: {password: s3cr3t-value, user: admin}
          interfaces:
            Standard:
              configure:
                implementation: Shell
                inputs:
                  pw: "{{ SELF.password }}"
                  command: "echo {{ SELF.user }} {{ inputs.pw | length }}"
                  other: "{{ SELF.user }}"
                  resultTemplate: {attributes: {o: "{{ inputs.other }}"}}
        """), " " * 8))
    assert invoke("deploy", "--approve").exit_code == 0
    assert _row(project, "configure")["digestKeys"] == "::db::user"
    assert "o: <<REDACTED>>" in _status(project)


CAPTURE = Path(__file__).parent.parent / "data" / "unfurl120" / "16-digest-reads"


def _unfurl_rows(step: str) -> list[dict[str, str]]:
    lines = (CAPTURE / step / "jobs.tsv").read_text().splitlines()[1:]
    return [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f) for line in lines]


def test_change_detection_follows_what_was_read_as_in_unfurl(project, invoke):
    """tests/data/unfurl120/16-digest-reads: the same digest as Unfurl's; a changed input
    nothing reads runs and records nothing; a changed property read by the environment
    reconfigures (Unfurl's rows, minus times and ids)."""
    project.write((CAPTURE / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve", "--commit").exit_code == 0
    theirs = [r for r in _unfurl_rows("1-deploy") if "operation" in r]
    ours = _row(project, "configure")
    assert (ours["digestKeys"], ours["digestValue"]) == (
        theirs[0]["digestKeys"], theirs[0]["digestValue"])
    job = next((project.root / "jobs").glob("job*.yaml")).read_text()
    assert "- ref: ::envy::level\n    expected: debug\n    required: true" in job

    _edit(project, "unused: one", "unused: two")
    lines, commits = len(project.jobs_tsv()), len(project.commits())
    assert invoke("deploy", "--approve", "--commit").exit_code == 0
    assert (len(project.jobs_tsv()), len(project.commits())) == (lines, commits)

    _edit(project, "level: debug", "level: info")
    assert invoke("deploy", "--approve", "--commit").exit_code == 0
    theirs = [r for r in _unfurl_rows("3-read-property") if "operation" in r][-1]
    ours = [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
            for line in project.jobs_tsv()[1:]][-1]
    keys = ("status", "target", "operation", "digestKeys", "digestValue", "summary")
    assert {k: ours[k] for k in keys} == {k: theirs[k] for k in keys}


def test_a_run_recorded_before_reads_were_tracked_compares_by_its_own_keys(project, invoke):
    """As Unfurl's check: the digest, now, of the keys the earlier run recorded. A record
    that listed every input (as this tool wrote them before) is no reason to reconfigure;
    a change to one of its keys is."""
    from unfurl_lite.expressions.digest import digest

    project.write(_logged("debug", "\n" + " " * 18 + "unused: one"))
    assert invoke("deploy", "--approve", "--commit").exit_code == 0
    text = (project.root / "jobs.tsv").read_text()
    new = "digestKeys=command,::envy::level"
    assert new in text
    value = text.split("digestValue=")[-1].split("\t")[0]
    old_value = digest(['echo "$LOG_LEVEL"', "one"])
    project.write(text.replace(new, "digestKeys=command,unused").replace(value, old_value),
                  name="jobs.tsv")
    assert "reconfigure" not in invoke("plan").output
    _edit(project, "unused: one", "unused: two")
    assert "reconfigure" in invoke("plan").output
    assert "unused" in invoke("plan").output.splitlines()[-1]


def test_host_reads_and_get_attribute_are_digest_keys_as_in_unfurl(project, invoke):
    """16-digest-reads/4-host-and-get-attribute: ``{{ HOST.ip }}`` is ``::server::ip``;
    ``get_attribute`` (here of a property) is ``::app::port``, unlike ``get_property``."""
    step = CAPTURE / "4-host-and-get-attribute"
    project.write((step / "ensemble.before.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    theirs = [dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
              for line in (step / "jobs.tsv").read_text().splitlines()[1:]]
    theirs_row = next(r for r in theirs if r.get("operation") == "configure")
    ours = _row(project, "configure")
    assert (ours["digestKeys"], ours["digestValue"]) == (
        theirs_row["digestKeys"], theirs_row["digestValue"])


def test_a_command_line_implementation_is_the_first_input(project, invoke):
    """Unfurl makes a command-line implementation the ``command`` input before the
    interface's and the operation's own (case 129): digestKeys list it first; an input
    named ``command`` replaces its value, not its place. Values: Unfurl 1.2.0's."""
    project.write(ensemble_yaml("""\
    scripted:
      type: tosca.nodes.Root
      interfaces:
        Standard:
          inputs:
            greeting: hi
          operations:
            create: echo "create {{ inputs.greeting }}"
            configure:
              implementation: echo "configure {{ inputs.name }} {{ inputs.greeting }}"
              inputs:
                name: box
                command: echo "replaced {{ inputs.name }}"
    """))
    assert invoke("deploy", "--approve").exit_code == 0
    create, configure = _row(project, "create"), _row(project, "configure")
    assert create["digestKeys"] == "command,greeting"
    assert create["digestValue"] == "3fc1ae19afc22f42350cf626890658080bec94ea"
    assert configure["digestKeys"] == "command,name"
    assert configure["digestValue"] == "c3c10a0b2b3a19307e97828df263e5e8829a34ca"


def test_inputs_dot_a_name_the_inputs_map_has_reads_that_attribute(project, invoke):
    """In Unfurl ``inputs`` is a ResultsMap: Jinja2's ``inputs.validate`` finds its
    ``validate`` attribute (False) before the input, so the input is not read and not
    digested (case 141); ``inputs['validate']`` reads the input."""
    project.write(ensemble_yaml("""\
    node:
      type: tosca.nodes.Root
      interfaces:
        Standard:
          create:
            implementation: echo "dot={{ inputs.validate }} {{ inputs.applyTemplates }}"
            inputs:
              validate: "yes"
              applyTemplates: "no"
              resultTemplate:
                attributes:
                  out: "{{ stdout | trim }}"
          configure:
            implementation: echo "item={{ inputs['validate'] }}"
            inputs:
              validate: "yes"
              resultTemplate:
                attributes:
                  item: "{{ stdout | trim }}"
    """))
    assert invoke("deploy", "--approve").exit_code == 0
    attributes = project.status()["node"]["attributes"]
    assert attributes == {"out": "dot=False True", "item": "item=yes"}
    assert _row(project, "create")["digestKeys"] == "command"
    assert _row(project, "create")["digestValue"] == "d181abc0b4fbde304fb84580f50da495ab7b3f17"
    assert _row(project, "configure")["digestKeys"] == "command,validate"


TEMPLATE_RUN = Path(__file__).parent.parent / "data" / "unfurl120" / "template-run-reads"


def _task_rows(text: str) -> dict[str, tuple[str, str]]:
    rows = (dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
            for line in text.splitlines())
    return {row["target"]: (row["digestKeys"], row["digestValue"])
            for row in rows if "target" in row}


def test_what_a_template_run_read_is_digested_as_unfurl_does(project, invoke):
    """A Template's ``run`` is rendered lazily by Unfurl: a string or a list's first item
    is read while its reads are recorded; a mapping's values only when a resultTemplate
    takes them as variables, and then only a query's reads count (a template's
    ``SELF.size`` goes through what the render bound). Keys and values: Unfurl 1.2.0's
    for the same ensemble (tests/data/unfurl120/template-run-reads)."""
    project.write((TEMPLATE_RUN / "ensemble.yaml").read_text())
    assert invoke("deploy", "--approve").exit_code == 0
    theirs = _task_rows((TEMPLATE_RUN / "deploy.jobs.tsv").read_text())
    ours = _task_rows("\n".join(project.jobs_tsv()))
    assert ours == theirs
    assert theirs["::queried"] == ("run", "1b237e092d48f354e89d4e31159243729a7c2d5d")
    assert theirs["::queried2"][0] == "run,::queried2::size,::queried2::label"
    attributes = {name: record.get("attributes") for name, record in project.status().items()}
    assert attributes["listed2"] == {"all": 3}  # {{ run }}: a list run's variable
    assert attributes["queried2"] == {"s": 3}


def test_a_result_template_naming_an_instance_after_its_secret_was_read_is_secret(
        project, invoke):
    """Unfurl-cases 164: the resultTemplate reads SELF's sensitive password, so the next
    attributes that name SELF (``{{ SELF.user }}``, even ``| length``) are secret as a
    whole (redacted); its digest keeps the plain ``::db::user`` it read."""
    case = Path(__file__).parent.parent / "data" / "unfurl-cases" / "164-docs-sensitive-property"
    text = (case / "ensemble.yaml").read_text()
    project.write(text.replace('user_copy: "{{ SELF.user }}"',
                               'user_copy: "{{ SELF.user }}"\n'
                               '                      ' 'port_copy: "{{ SELF.user | length }}"'))
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    attributes = project.status()["db"]["attributes"]
    assert attributes["user_copy"] == "<<REDACTED>>"
    assert attributes["port_copy"] == "<<REDACTED>>"
    assert _row(project, "create")["digestKeys"] == "::db::user"
