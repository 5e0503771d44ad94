# -*- coding: utf-8 -*-
# Copyright (c) 2026 The tbhost authors; MIT License (see LICENSE)
# A minimal JSON stdout callback for the collection's test: Debian's
# ansible-core has no ansible.posix.json. Prints {"plays": [{"tasks": [{"task":
# {"name"}, "hosts": {HOST: result}}]}], "stats": {HOST: {...}}}.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: tbhost_json
type: stdout
short_description: JSON results for tbhost's collection test
description: Prints every task's per-host results and the stats as one JSON document.
"""

import json

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "tbhost_json"

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.plays = []

    def v2_playbook_on_play_start(self, play):
        self.plays.append({"play": {"name": play.get_name()}, "tasks": []})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.plays[-1]["tasks"].append({"task": {"name": task.get_name()}, "hosts": {}})

    def _record(self, result, **extra):
        res = dict(result._result)
        res.update(extra)
        self.plays[-1]["tasks"][-1]["hosts"][result._host.get_name()] = res

    def v2_runner_on_ok(self, result, **kwargs):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._record(result, failed=True)

    def v2_runner_on_skipped(self, result, **kwargs):
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._record(result, unreachable=True, failed=True)

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        out = {"plays": self.plays, "stats": {}}
        for h in hosts:
            s = stats.summarize(h)
            out["stats"][h] = {"Changed": s["changed"], "Failures": s["failures"], "Ok": s["ok"], "Unreachable": s["unreachable"]}
        self._display.display(json.dumps(out, default=str))
