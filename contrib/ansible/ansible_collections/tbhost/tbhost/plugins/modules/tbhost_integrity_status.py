#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tbhost_integrity_status
short_description: dm-integrity state of the tables array (tbhost integrity status)
description:
  - Runs C(tbhost integrity status) and returns its JSON. Fails with tbhost's message and
    exit code when tbhost reports a problem (exit 1) or cannot run (exit 3), unless
    I(fail_on_problem=false), which returns the problem as C(ok=false).
  - Reads only; never changes anything.
options:
  fail_on_problem:
    description: Fail the task when tbhost finds a problem.
    type: bool
    default: true
extends_documentation_fragment:
  - tbhost.tbhost.common
author: The tbhost authors
"""

EXAMPLES = r"""
- tbhost.tbhost.tbhost_integrity_status:
  register: integrity
"""

RETURN = r"""
status:
  description: tbhost's JSON of integrity status.
  returned: when tbhost printed it
  type: dict
ok:
  description: false when tbhost found a problem.
  returned: success
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tbhost.tbhost.plugins.module_utils.tbhost import COMMON_ARGS, fail, run_tbhost, tbhost_message


def main():
    spec = dict(COMMON_ARGS)
    spec.update(fail_on_problem=dict(type="bool", default=True))
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    rc, data, out, err, argv = run_tbhost(module, ["integrity", "status"])
    if rc == 1 and not module.params["fail_on_problem"]:
        module.exit_json(changed=False, ok=False, status=data, msg=tbhost_message(err, data), rc=rc)
    if rc != 0:
        fail(module, rc, err, argv, data, status=data)
    module.exit_json(changed=False, ok=True, status=data, rc=rc)


if __name__ == "__main__":
    main()
