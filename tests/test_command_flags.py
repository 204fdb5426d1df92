"""Every command keeps every flag users type and script against: name, type, default and choices of each command's
own flags (those generated from its configuration's fields and the frame's), against the recorded table
tests/fixtures/command_flags.json. A new flag is fine; a flag that disappears or changes its type, default or
choices fails, naming it.

Regenerate the table only for a deliberate change of the command line: `python tests/test_command_flags.py`."""

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from helpers import REPO

TABLE = os.path.join(REPO, "tests", "fixtures", "command_flags.json")
COMMANDS = sorted(re.findall(r'"bert-[\w-]+=bert_tf\.cli\.(\w+):run"',
                             open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()))
# One command's own flags (those the frame generates from its configuration, and its own --config, --set,
# --platform; not absl's), in a fresh interpreter, as its console script would see them.
FLAGS_OF_ONE_COMMAND = """
import json, sys, importlib
from bert_tf.cli.command import command_flag_values

pytestmark = pytest.mark.fast  # in `make test-fast` too
flag_values = command_flag_values(importlib.import_module("bert_tf.cli." + sys.argv[1]).COMMAND)
table = {}
for name in flag_values:
    flag = flag_values[name]
    table[name] = {"type": flag.flag_type(), "default": flag.default,
                   "choices": sorted(getattr(flag.parser, "enum_values", None) or []) or None}
print(json.dumps(table, sort_keys=True))
"""


def command_flags(command):
    done = subprocess.run([sys.executable, "-c", FLAGS_OF_ONE_COMMAND, command], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def all_command_flags():
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(COMMANDS, pool.map(command_flags, COMMANDS)))


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
