#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tbhost_prefix
short_description: Build or check the table-prefix store (tbhost prefix extract / verify)
description:
  - I(state=extracted) runs C(tbhost prefix extract); C(changed) when it wrote a prefix.
    In check mode it runs C(tbhost prefix verify) instead and reports C(changed) when the
    store is missing, stale or corrupt prefixes (what extract would rewrite).
  - I(state=verified) runs C(tbhost prefix verify) and fails when it finds anything.
options:
  state:
    description: extracted or verified.
    type: str
    choices: [extracted, verified]
    default: extracted
  tables:
    description: Table directories (C(--tables)).
    type: list
    elements: path
    required: true
  store:
    description: The prefix store directory (C(--store)).
    type: path
    required: true
  jobs:
    description: Files processed in parallel.
    type: int
    default: 4
  full:
    description: verify also rereads the tables' prefix bytes (C(--full)).
    type: bool
    default: false
extends_documentation_fragment:
  - tbhost.tbhost.common
author: The tbhost authors
"""

EXAMPLES = r"""
- tbhost.tbhost.tbhost_prefix:
    tables: [/srv/syzygy]
    store: /srv/prefix
"""

RETURN = r"""
result:
  description: tbhost's JSON result of extract or verify.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tbhost.tbhost.plugins.module_utils.tbhost import COMMON_ARGS, run_or_fail


def main():
    spec = dict(COMMON_ARGS)
    spec.update(
        state=dict(type="str", choices=["extracted", "verified"], default="extracted"),
        tables=dict(type="list", elements="path", required=True),
        store=dict(type="path", required=True),
        jobs=dict(type="int", default=4),
        full=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    verify = p["state"] == "verified" or module.check_mode
    args = ["prefix", "verify" if verify else "extract", "--store", p["store"], "--jobs", str(p["jobs"])]
    for t in p["tables"]:
        args += ["--tables", t]
    if verify and p["full"]:
        args.append("--full")
    if p["state"] == "extracted" and module.check_mode:
        # verify exits 1 for findings: that is what extract would fix
        rc, data = run_or_fail(module, args, ok=(0, 1), key="result")
        module.exit_json(changed=rc == 1, result=data)
    rc, data = run_or_fail(module, args, key="result")
    module.exit_json(changed=(not verify) and (data.get("written") or 0) > 0, result=data)


if __name__ == "__main__":
    main()
