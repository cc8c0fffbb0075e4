"""A plan as an Ansible playbook, to roll one change out across many hosts.

Same steps, same checks: the playbook first checks that each device still has the size it was
planned with, then evaluates every step's postcondition with read-only commands, treats a step
as done when it or any later step is in effect (as resuming an applied plan does), runs the
rest with the command module's ``argv`` (no shell), and verifies each step took effect.
Running it twice changes nothing the second time.

The read-only checks run as ``raw`` commands (shlex-quoted, stderr dropped) and only the
changes use the command module: every command-module task ships and starts a Python module on
the host (about 7 s each in the emulated lab, a second or so over ssh), and an attach has ~26
checks but 6 changes. raw needs no Python and costs what the command itself costs.
"""

from __future__ import annotations

import shlex
from typing import Any

from advisor.errors import Described, codes, next_step, shown
from advisor.plan.checks import Check, kname_var
from advisor.plan.language import repeats
from advisor.plan.model import Plan

Task = dict[str, Any]


class Unsafe(str):
    """Text from device data (paths, names, the plan's title): written as ``!unsafe``, so that
    Ansible never templates it on the controller. A device or LV name holding ``{{ ... }}``
    would otherwise run Jinja there. Conditions and set_fact expressions, which must be
    templated, hold only the playbook's own variables and quoted literals."""


JINJA = ("{{", "{%", "{#")


def _jinja_in(plan: Plan) -> str | None:
    """A string of the plan (a device's path, an LV's name, the title) that holds a Jinja
    delimiter, which a playbook must never carry to the controller; None when none does."""
    todo: list[Any] = [plan.to_json()]
    while todo:
        value = todo.pop()
        if isinstance(value, str) and any(j in value for j in JINJA):
            return value
        if isinstance(value, dict):
            todo += list(value.keys()) + list(value.values())
        elif isinstance(value, list):
            todo += value
    return None


codes({"no-playbook": "{why}"})


class AnsibleError(Described, ValueError):
    """The plan cannot be expressed as a playbook (yet)."""

    CODE = "no-playbook"


def _probe(
    name: str, argv: list[str] | tuple[str, ...], register: str, when: str | None = None, templated: bool = False
) -> Task:
    """A read-only check: a raw command whose result is registered and never fails the play.
    ``templated``: the command uses the playbook's own variables (a device's kernel name, looked
    up on each host; the check kind says so, never the text), the rest being the plan
    language's sysfs paths; any other command is written !unsafe."""
    raw = shlex.join(argv) + " 2>/dev/null"
    task: Task = {
        "name": Unsafe(name),
        "ansible.builtin.raw": raw if templated else Unsafe(raw),
        "register": register,
        "changed_when": False,
        "failed_when": False,
        # Read-only: it runs under --check too, so that the asserts and the in-effect facts
        # that use its result hold there as they would for real.
        "check_mode": False,
    }
    if when:
        task["when"] = when
    return task


def _asserted(check: Check, register: str, when: str, names: tuple[str, str], fail_msg: str) -> list[Task]:
    """A check as two tasks: its read-only command, then an assert on the result."""
    form = check.ansible(register)
    return [
        _probe(names[0], form.argv, register, when, form.templated),
        {
            "name": Unsafe(names[1]),
            "ansible.builtin.assert": {"that": [form.condition], "fail_msg": Unsafe(fail_msg)},
            "when": when,
        },
    ]


def playbook(plan: Plan) -> list[dict[str, Any]]:
    jinja = _jinja_in(plan)
    if jinja is not None:
        raise AnsibleError(
            f"the plan holds {shown(jinja)}, which Ansible would run as a template on the controller; cachewise "
            "writes no playbook for it",
            next=[next_step("apply-on-each-host")],
        )
    if any(s.write is not None or s.wait is not None for s in plan.steps):
        raise AnsibleError(
            f"{plan.kind} plans write to sysfs, which the playbook form does not cover yet",
            next=[next_step("apply-on-each-host")],
        )
    tasks: list[Task] = []
    roles = {c.role for s in plan.steps for c in (*s.pre, *s.post) if c.role}
    for d in plan.devices:  # sysfs checks name a device by role: its kernel name on this host
        if d.role in roles:
            tasks.append(
                _probe(f"find the kernel name of {d.path}", ["lsblk", "-dno", "KNAME", d.path], kname_var(d.role))
            )
    for i, d in enumerate(plan.devices):
        reg = f"cw_size_{i}"
        tasks.append(_probe(f"preflight: {d.path} is still there", ["lsblk", "-bdno", "SIZE", d.path], reg))
        tasks.append(
            {
                "name": Unsafe(f"preflight: {d.path} has the size it was planned with ({d.size_bytes} bytes)"),
                "ansible.builtin.assert": {
                    "that": [f"({reg}.stdout | trim | int) == {int(d.size_bytes)}"],
                    "fail_msg": Unsafe(
                        f"{d.path} is missing or changed since planning; nothing was changed. Make a new plan."
                    ),
                },
            }
        )
    # done_i: step i, or any later step, is in effect. Checked from the last step back, so a
    # host where the plan is complete answers with the last step's checks alone.
    for i in reversed(range(len(plan.steps))):
        step = plan.steps[i]
        later_done = f"cw_done_{i + 1}" if i + 1 < len(plan.steps) else None
        parts = []
        # A step that runs whenever the play reaches it (the initramfs made again) is never
        # done beforehand: its checks only verify it, below.
        for j, check in enumerate(() if repeats(step) else step.post):
            form = check.ansible(f"cw_post_{i}_{j}")
            tasks.append(
                _probe(
                    f"check: {check.describe()}",
                    form.argv,
                    f"cw_post_{i}_{j}",
                    f"not ({later_done} | bool)" if later_done else None,
                    form.templated,
                )
            )
            parts.append(form.condition)
        mine = " and ".join(parts) if parts else "false"
        # `or` stops at a later step in effect, before reading checks that were skipped.
        expr = f"({later_done} | bool) or ({mine})" if later_done else mine
        tasks.append(
            {
                "name": f"step {i + 1} already in effect?",
                "ansible.builtin.set_fact": {f"cw_done_{i}": f"{{{{ {expr} }}}}"},
            }
        )
    for i, step in enumerate(plan.steps):
        # Under --check no command runs: only the first step not in effect can have its
        # preconditions checked (the later ones wait for it), and no step is verified.
        first = f" and (not ansible_check_mode or (cw_done_{i - 1} | bool))" if i else ""
        for j, check in enumerate(step.pre):
            tasks += _asserted(
                check,
                f"cw_pre_{i}_{j}",
                f"not (cw_done_{i} | bool){first}",
                (f"before step {i + 1}: {check.describe()}?", f"before step {i + 1}: precondition"),
                f"expected that {check.describe()}; step {i + 1} and later did not run.",
            )
        tasks.append(
            {
                "name": Unsafe(f"step {i + 1}: {step.description}"),
                "ansible.builtin.command": {"argv": [Unsafe(a) for a in step.argv]},
                "when": f"not (cw_done_{i} | bool)",
            }
        )
        for j, check in enumerate(step.post):
            tasks += _asserted(
                check,
                f"cw_verify_{i}_{j}",
                f"not (cw_done_{i} | bool) and not ansible_check_mode",
                (f"verify step {i + 1}: {check.describe()}", f"verify step {i + 1} took effect"),
                f"step {i + 1} ({step.description}) did not take effect; later steps did not run.",
            )
    return [{"name": Unsafe(plan.title), "hosts": "all", "become": True, "gather_facts": False, "tasks": tasks}]


def render(plan: Plan) -> str:
    header = (
        f"# cachewise plan {plan.kind}, made {plan.created} on {shown(plan.host)}\n"
        "# ansible-playbook -i HOSTS this.yml   (devices are named by stable paths; check them per host)\n"
    )
    import yaml  # lazy: yaml, only the playbook form needs it

    class Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML has no type hints here
        pass

    def unsafe(dumper: yaml.SafeDumper, text: Unsafe) -> yaml.ScalarNode:
        return dumper.represent_scalar("!unsafe", str(text), style="'")

    Dumper.add_representer(Unsafe, unsafe)
    body: str = yaml.dump(playbook(plan), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1000)
    return header + body
