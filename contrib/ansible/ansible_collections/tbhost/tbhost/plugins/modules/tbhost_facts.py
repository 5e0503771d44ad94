#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tbhost_facts
short_description: The host's block devices as tbhost sees them (tbhost inventory)
description:
  - Runs C(tbhost --json inventory) and returns it as the fact C(tbhost_inventory)
    (stable ids, sizes, block sizes, rotational, signatures, holders, role guess).
  - Reads only; never changes anything.
extends_documentation_fragment:
  - tbhost.tbhost.common
author: The tbhost authors
"""

EXAMPLES = r"""
- tbhost.tbhost.tbhost_facts:
- ansible.builtin.debug:
    var: ansible_facts.tbhost_inventory
"""

RETURN = r"""
ansible_facts:
  description: C(tbhost_inventory), the JSON of tbhost inventory.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tbhost.tbhost.plugins.module_utils.tbhost import COMMON_ARGS, run_or_fail


def main():
    module = AnsibleModule(argument_spec=dict(COMMON_ARGS), supports_check_mode=True)
    rc, data = run_or_fail(module, ["inventory"])
    module.exit_json(changed=False, ansible_facts=dict(tbhost_inventory=data))


if __name__ == "__main__":
    main()
