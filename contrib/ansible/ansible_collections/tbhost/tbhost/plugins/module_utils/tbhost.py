# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
"""Runs the tbhost binary with --json and turns its result into module results.

Every module is a thin layer over one tbhost command: tbhost decides, the
module reports. tbhost's exit codes: 0 ok, 1 a check found a problem or
tbhost refused, 2 usage error, 3 could not run; its error is the last
"tbhost: ..." block on stderr.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

COMMON_ARGS = dict(
    binary=dict(type="str", default="tbhost"),
    root=dict(type="path"),
)


def tbhost_argv(module, args):
    """The full command line: binary, --json, --root if given, then args."""
    binary = module.get_bin_path(module.params["binary"], required=True) \
        if "/" not in module.params["binary"] else module.params["binary"]
    argv = [binary, "--json"]
    if module.params.get("root"):
        argv += ["--root", module.params["root"]]
    return argv + list(args)


def tbhost_message(stderr, data=None):
    """tbhost's own error text: the JSON error object's message when tbhost
    printed one, else stderr from the first line starting with 'tbhost:'."""
    if isinstance(data, dict) and isinstance(data.get("error"), dict) and data["error"].get("message"):
        return data["error"]["message"]
    lines = (stderr or "").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("tbhost: "):
            return "\n".join(lines[i:]).strip()
    return (stderr or "").strip()


def run_tbhost(module, args):
    """Runs tbhost; returns (rc, parsed JSON or None, stdout, stderr, argv)."""
    argv = tbhost_argv(module, args)
    rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    data = None
    if out and out.strip():
        try:
            data = json.loads(out)
        except ValueError:
            data = None
    return rc, data, out, err, argv


def fail(module, rc, err, argv, data=None, **extra):
    """Fails the task with tbhost's message and exit code."""
    msg = tbhost_message(err, data) or "tbhost exited %d" % rc
    module.fail_json(msg=msg, rc=rc, stderr=err, cmd=argv, **extra)


def run_or_fail(module, args, ok=(0,), key=None):
    """Runs tbhost and returns (rc, parsed JSON); fails the task, with
    tbhost's message and exit code, when the exit code is not in ok or
    tbhost printed no JSON. key names the result in the failed task
    (report=..., result=...)."""
    rc, data, out, err, argv = run_tbhost(module, args)
    if rc not in ok or data is None:
        extra = {key: data} if key else {}
        fail(module, rc, err, argv, data, **extra)
    return rc, data
