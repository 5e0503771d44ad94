# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
"""The options every tbhost module takes (module_utils.tbhost.COMMON_ARGS)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  binary:
    description: The tbhost binary (a name on PATH or an absolute path).
    type: str
    default: tbhost
  root:
    description: Read /sys, /proc, /dev/disk/by-id and /run/udev under this directory (C(--root)).
    type: path
"""
