"""A plan as an Ansible playbook, to roll one change out across many hosts.

Same steps, same checks: the playbook first checks that each device still has the size it was
planned with, then evaluates every step's postcondition with read-only commands, treats a step
as done when it or any later step is in effect (as ``cachewise apply --resume`` does), runs the
rest with the command module's ``argv`` (no shell), and verifies each step took effect.
Running it twice changes nothing the second time.

The read-only checks run as ``raw`` commands (shlex-quoted, stderr dropped) and only the
changes use the command module: every command-module task ships and starts a Python module on
the host (about 7 s each in the emulated lab, a second or so over ssh), and an attach has ~26
checks but 6 changes. raw needs no Python and costs what the command itself costs.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from advisor.plan.model import Check, Plan

Task = dict[str, Any]


class AnsibleError(ValueError):
    """The plan cannot be expressed as a playbook (yet)."""


def _check(check: Check) -> tuple[list[str], str]:
    """A read-only argv and a Jinja condition on its registered result ``r``."""
    a = check.args
    q = json.dumps  # a quoted Jinja string literal
    if check.kind in ("pv", "not_pv"):
        return ["pvs", "--noheadings", "-o", "pv_name", a["device"]], "r.rc == 0" if check.kind == "pv" else "r.rc != 0"
    if check.kind in ("pv_in_vg", "not_pv_in_vg"):
        cond = f"(r.rc == 0 and (r.stdout | trim) == {q(a['vg'])})"
        return ["pvs", "--noheadings", "-o", "vg_name", a["device"]], cond if check.kind == "pv_in_vg" else f"not {cond}"
    if check.kind in ("lv", "no_lv"):
        return ["lvs", a["lv"]], "r.rc == 0" if check.kind == "lv" else "r.rc != 0"
    if check.kind in ("segtype", "not_segtype"):
        argv = ["lvs", "--noheadings", "-o", "segtype", a["lv"]]
        if check.kind == "segtype":
            return argv, f"(r.rc == 0 and (r.stdout | trim) == {q(a['segtype'])})"
        return argv, f"(r.rc == 0 and (r.stdout | trim) != {q(a['segtype'])})"
    if check.kind == "cache_mode":
        return ["lvs", "--noheadings", "-o", "cache_mode", a["lv"]], f"(r.rc == 0 and (r.stdout | trim) == {q(a['mode'])})"
    if check.kind == "no_signature":
        return ["blkid", "-p", a["device"]], "r.rc == 2"
    if check.kind == "not_mounted":
        return ["lsblk", "-rno", "MOUNTPOINT", a["device"]], "(r.rc == 0 and (r.stdout | trim) == '')"
    raise AnsibleError(f"the check {check.kind!r} has no playbook form yet")


def _probe(name: str, argv: list[str], register: str, when: str | None = None) -> Task:
    """A read-only check: a raw command whose result is registered and never fails the play."""
    task: Task = {"name": name, "ansible.builtin.raw": shlex.join(argv) + " 2>/dev/null", "register": register,
                  "changed_when": False, "failed_when": False}
    if when:
        task["when"] = when
    return task


def playbook(plan: Plan) -> list[dict[str, Any]]:
    if any(s.write is not None or s.wait is not None for s in plan.steps):
        raise AnsibleError(f"{plan.kind} plans write to sysfs, which the playbook form does not cover yet; "
                           "run `cachewise apply` on each host instead")
    tasks: list[Task] = []
    for i, d in enumerate(plan.devices):
        reg = f"cw_size_{i}"
        tasks.append(_probe(f"preflight: {d.path} is still there", ["lsblk", "-bdno", "SIZE", d.path], reg))
        tasks.append({"name": f"preflight: {d.path} has the size it was planned with ({d.size_bytes} bytes)",
                      "ansible.builtin.assert": {
                          "that": [f"({reg}.stdout | trim | int) == {d.size_bytes}"],
                          "fail_msg": f"{d.path} is missing or changed since planning; nothing was changed. Make a new plan."}})
    # done_i: step i, or any later step, is in effect. Checked from the last step back, so a
    # host where the plan is complete answers with the last step's checks alone.
    for i in reversed(range(len(plan.steps))):
        step = plan.steps[i]
        later_done = f"cw_done_{i + 1}" if i + 1 < len(plan.steps) else None
        parts = []
        for j, check in enumerate(step.post):
            argv, cond = _check(check)
            reg = f"cw_post_{i}_{j}"
            tasks.append(_probe(f"check: {check.describe()}", argv, reg,
                                f"not ({later_done} | bool)" if later_done else None))
            parts.append(cond.replace("r.", f"{reg}."))
        mine = " and ".join(parts) if parts else "false"
        # `or` stops at a later step in effect, before reading checks that were skipped.
        expr = f"({later_done} | bool) or ({mine})" if later_done else mine
        tasks.append({"name": f"step {i + 1} already in effect?",
                      "ansible.builtin.set_fact": {f"cw_done_{i}": f"{{{{ {expr} }}}}"}})
    for i, step in enumerate(plan.steps):
        for j, check in enumerate(step.pre):
            argv, cond = _check(check)
            reg = f"cw_pre_{i}_{j}"
            tasks.append(_probe(f"before step {i + 1}: {check.describe()}?", argv, reg, f"not (cw_done_{i} | bool)"))
            tasks.append({"name": f"before step {i + 1}: precondition", "ansible.builtin.assert": {
                "that": [cond.replace("r.", f"{reg}.")],
                "fail_msg": f"expected that {check.describe()}; step {i + 1} and later did not run."},
                "when": f"not (cw_done_{i} | bool)"})
        tasks.append({"name": f"step {i + 1}: {step.description}", "ansible.builtin.command": {"argv": list(step.argv)},
                      "when": f"not (cw_done_{i} | bool)"})
        for j, check in enumerate(step.post):
            argv, cond = _check(check)
            reg = f"cw_verify_{i}_{j}"
            tasks.append(_probe(f"verify step {i + 1}: {check.describe()}", argv, reg, f"not (cw_done_{i} | bool)"))
            tasks.append({"name": f"verify step {i + 1} took effect", "ansible.builtin.assert": {
                "that": [cond.replace("r.", f"{reg}.")],
                "fail_msg": f"step {i + 1} ({step.description}) did not take effect; later steps did not run."},
                "when": f"not (cw_done_{i} | bool)"})
    return [{"name": plan.title, "hosts": "all", "become": True, "gather_facts": False, "tasks": tasks}]


def to_yaml(data: Any, indent: int = 0) -> str:
    """A small YAML writer for the playbook's plain data (scalars are JSON-quoted, which is
    valid YAML)."""
    pad = "  " * indent
    if isinstance(data, list):
        if not data:
            return pad + "[]\n"
        out = []
        for item in data:
            body = to_yaml(item, indent + 1)
            out.append(pad + "- " + body.lstrip())
        return "".join(out)
    if isinstance(data, dict):
        out = []
        for key, value in data.items():
            if isinstance(value, (dict, list)) and value:
                out.append(f"{pad}{key}:\n" + to_yaml(value, indent + 1))
            else:
                out.append(f"{pad}{key}: {_scalar(value)}\n")
        return "".join(out)
    return pad + _scalar(data) + "\n"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def render(plan: Plan) -> str:
    header = (f"# cachewise plan {plan.kind}, made {plan.created} on {plan.host}\n"
              "# ansible-playbook -i HOSTS this.yml   (devices are named by stable paths; check them per host)\n")
    return header + to_yaml(playbook(plan))
