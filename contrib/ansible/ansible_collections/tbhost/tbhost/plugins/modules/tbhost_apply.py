#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tbhost_apply
short_description: Build exactly what a reviewed plan says (tbhost lvm apply)
description:
  - Runs C(tbhost lvm apply --yes PLAN); in check mode C(tbhost lvm apply --dry-run PLAN),
    which runs nothing that writes.
  - C(changed) is true only when tbhost ran a command (in check mode, when it would run one);
    steps already done are skipped by tbhost, so a host that matches the plan reports
    C(changed=false).
  - The diff lists the commands that ran (or would run).
  - A refusal (stale plan, device in use or carrying data, a differing array) fails the
    task with tbhost's message and exit code 1; a command that failed gives exit code 3.
options:
  plan:
    description: The plan file (from tbhost_plan or tbhost lvm plan -o).
    type: path
    required: true
  wait_sync:
    description: Wait until the initial RAID/integrity sync is done (C(--wait-sync)).
    type: bool
    default: false
extends_documentation_fragment:
  - tbhost.tbhost.common
author: The tbhost authors
"""

EXAMPLES = r"""
- tbhost.tbhost.tbhost_apply:
    plan: /root/tbhost-plan.yaml
"""

RETURN = r"""
report:
  description: tbhost's apply report (steps with their action run, skip, would-run, failed).
  returned: always
  type: dict
commands:
  description: The commands that ran (would run in check mode).
  returned: success
  type: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tbhost.tbhost.plugins.module_utils.tbhost import COMMON_ARGS, run_or_fail


def main():
    spec = dict(COMMON_ARGS)
    spec.update(plan=dict(type="path", required=True), wait_sync=dict(type="bool", default=False))
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    args = ["lvm", "apply"]
    if module.check_mode:
        args.append("--dry-run")
    else:
        args.append("--yes")
        if module.params["wait_sync"]:
            args.append("--wait-sync")
    args.append(module.params["plan"])
    rc, data = run_or_fail(module, args, key="report")
    wanted = "would-run" if module.check_mode else "run"
    commands = [" ".join(s.get("argv") or []) for s in data.get("steps") or [] if s.get("action") == wanted]
    module.exit_json(
        changed=bool(commands),
        report=data,
        commands=commands,
        diff=dict(before="", after="\n".join(commands) + ("\n" if commands else ""),
                  after_header="tbhost lvm apply " + module.params["plan"]),
    )


if __name__ == "__main__":
    main()
