#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tbhost_plan
short_description: Plan the tablebase arrays of a host (tbhost lvm plan) into a plan file
description:
  - Runs C(tbhost lvm plan) and keeps the plan in I(dest) for review; C(changed) only when
    the plan differs from the one already in I(dest) (its creation time aside).
  - The diff shows the plan's commands. Nothing on the host's disks changes.
options:
  dest:
    description: Where the plan (YAML) is kept.
    type: path
    required: true
  hdd:
    description: HDDs for the RAID 5 (C(--hdd)); default every non-system rotational disk.
    type: list
    elements: str
  nvme:
    description: NVMe disks or partitions for the RAID 0 (C(--nvme)).
    type: list
    elements: str
  no_nvme:
    description: Plan the HDD array only.
    type: bool
    default: false
  prefix_size:
    description: Size of vg-nvme/prefix, e.g. 201GiB.
    type: str
  wipe:
    description: Devices whose data apply may destroy (C(--wipe)).
    type: list
    elements: str
extends_documentation_fragment:
  - tbhost.tbhost.common
author: The tbhost authors
"""

EXAMPLES = r"""
- tbhost.tbhost.tbhost_plan:
    dest: /root/tbhost-plan.yaml
  register: plan
"""

RETURN = r"""
plan:
  description: The plan as JSON (devices, arrays, commands, notes).
  returned: success
  type: dict
commands:
  description: The commands apply would run, one string each.
  returned: success
  type: list
"""

import os
import shutil
import tempfile

import yaml

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tbhost.tbhost.plugins.module_utils.tbhost import COMMON_ARGS, run_or_fail


def comparable(text):
    """The plan without its creation time."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if isinstance(doc, dict):
        doc.pop("created", None)
    return doc


def main():
    spec = dict(COMMON_ARGS)
    spec.update(
        dest=dict(type="path", required=True),
        hdd=dict(type="list", elements="str"),
        nvme=dict(type="list", elements="str"),
        no_nvme=dict(type="bool", default=False),
        prefix_size=dict(type="str"),
        wipe=dict(type="list", elements="str"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    tmpdir = tempfile.mkdtemp(prefix="tbhost-plan-")
    try:
        tmp = os.path.join(tmpdir, "plan.yaml")
        args = ["lvm", "plan", "-o", tmp]
        for d in p["hdd"] or []:
            args += ["--hdd", d]
        for d in p["nvme"] or []:
            args += ["--nvme", d]
        for d in p["wipe"] or []:
            args += ["--wipe", d]
        if p["no_nvme"]:
            args.append("--no-nvme")
        if p["prefix_size"]:
            args += ["--prefix-size", p["prefix_size"]]
        rc, data = run_or_fail(module, args)
        with open(tmp) as f:
            new = f.read()
        old = None
        if os.path.exists(p["dest"]):
            with open(p["dest"]) as f:
                old = f.read()
        commands = [" ".join(c) for c in data.get("commands") or []]
        changed = old is None or comparable(old) != comparable(new)
        diff = dict(before="", after="\n".join(commands) + "\n",
                    before_header=p["dest"], after_header="tbhost lvm plan")
        if old is not None:
            old_doc = comparable(old) or {}
            diff["before"] = "\n".join(" ".join(c) for c in old_doc.get("commands") or []) + "\n"
        if changed and not module.check_mode:
            shutil.move(tmp, p["dest"])
        module.exit_json(changed=changed, plan=data, commands=commands, dest=p["dest"], diff=diff)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    main()
