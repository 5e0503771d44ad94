#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tbhost_monitor_check
short_description: Per-disk read balance and health of the arrays (tbhost monitor check)
description:
  - Runs C(tbhost monitor check) and returns its verdict (OK, WARNING, CRITICAL, UNKNOWN;
    tbhost uses the Nagios exit codes 0-3 here). Fails when the status is I(fail_on) or worse.
  - Reads only; never changes anything.
options:
  arrays:
    description: Arrays to check (default every array).
    type: list
    elements: str
  for_:
    description: Sampling window (C(--for)), e.g. 60s.
    type: str
    default: 60s
    aliases: [window]
  interval:
    description: Time between samples (C(--interval)).
    type: str
    default: 5s
  fail_on:
    description: The least severe status that fails the task.
    type: str
    choices: [warning, critical, unknown, never]
    default: critical
extends_documentation_fragment:
  - tbhost.tbhost.common
author: The tbhost authors
"""

EXAMPLES = r"""
- tbhost.tbhost.tbhost_monitor_check:
    window: 60s
"""

RETURN = r"""
status:
  description: OK, WARNING, CRITICAL or UNKNOWN.
  returned: always
  type: str
report:
  description: tbhost's JSON report (arrays, members, problems).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tbhost.tbhost.plugins.module_utils.tbhost import COMMON_ARGS, run_or_fail

RANK = {"warning": 1, "critical": 2, "unknown": 3}


def main():
    spec = dict(COMMON_ARGS)
    spec.update(
        arrays=dict(type="list", elements="str"),
        for_=dict(type="str", default="60s", aliases=["window"]),
        interval=dict(type="str", default="5s"),
        fail_on=dict(type="str", choices=["warning", "critical", "unknown", "never"], default="critical"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    args = ["monitor", "check", "--for", p["for_"], "--interval", p["interval"]] + (p["arrays"] or [])
    rc, data = run_or_fail(module, args, ok=(0, 1, 2, 3))
    status = data.get("status", "UNKNOWN")
    if p["fail_on"] != "never" and rc >= RANK[p["fail_on"]]:
        module.fail_json(msg="tbhost monitor check: %s: %s" % (status, data.get("summary", "")), rc=rc, status=status, report=data)
    module.exit_json(changed=False, status=status, rc=rc, report=data)


if __name__ == "__main__":
    main()
