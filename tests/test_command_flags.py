"""Every command keeps every flag users type and script against: name, type, default and choices of each command's
own flags (those generated from its configuration's fields and the frame's), against the recorded table
tests/fixtures/command_flags.json. A new flag is fine; a flag that disappears or changes its type, default or
choices fails, naming it.

Regenerate the table only for a deliberate change of the command line: `python tests/test_command_flags.py`."""

import importlib
import json
import os
import re

from bert_tf.cli.flag_parsing import command_flag_values
from helpers import REPO

TABLE = os.path.join(REPO, "tests", "fixtures", "command_flags.json")
COMMANDS = sorted(re.findall(r'"bert-[\w-]+=bert_tf\.cli\.(\w+):run"',
                             open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()))


def command_flags(command):
    """One command's own flags (those the frame generates from its configuration, and its --config, --set,
    --platform; not absl's), as its console script defines them."""
    flag_values = command_flag_values(importlib.import_module(f"bert_tf.cli.{command}").COMMAND)
    return {name: {"type": flag_values[name].flag_type(), "default": flag_values[name].default,
                   "choices": sorted(getattr(flag_values[name].parser, "enum_values", None) or []) or None}
            for name in flag_values}


def all_command_flags():
    return {command: command_flags(command) for command in COMMANDS}


def test_every_command_keeps_the_name_type_default_and_choices_of_each_flag():
    with open(TABLE, encoding="utf-8") as f:
        before = json.load(f)
    now = all_command_flags()
    assert set(before) <= set(now), sorted(set(before) - set(now))
    for command, flags in before.items():
        missing = sorted(set(flags) - set(now[command]))
        assert not missing, f"bert-{command} lost the flags {missing}"
        changed = {name: (spec, now[command][name]) for name, spec in flags.items() if now[command][name] != spec}
        assert not changed, f"bert-{command}: flags changed (before, now): {changed}"


if __name__ == "__main__":
    with open(TABLE, "w", encoding="utf-8") as f:
        json.dump(all_command_flags(), f, indent=1, sort_keys=True)
        f.write("\n")
