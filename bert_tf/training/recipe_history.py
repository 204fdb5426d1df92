"""How a model directory remembers the recipes its checkpoints were trained with, and what a resumed run may change.

`recipe.yaml` is the recipe of the run that wrote the first checkpoint; it is never rewritten once a checkpoint
exists. Each later start whose recipe differs in any field adds `recipe-2.yaml`, `recipe-3.yaml`, ... (a first line
says the step it resumed at and what changed), so the directory says how every checkpoint was trained.

A resumed run may not silently train under another recipe: a change of the model (a field that keeps the
variables' shapes, such as dropout; another shape cannot resume at all), the optimizer, the learning rate or
warmup, a batch size, a phase's sequence lengths, the phases themselves, or a shorter `num_train_steps` stops it
before its first step with one line naming the differences and `--accept_recipe_change`, the flag that accepts
them. A longer `num_train_steps` (its phases rescaled) and `restart_input_on_resize` are accepted as they are, with
a log line saying what they change for the rest of the run: where the phases now end and the learning rate.
Other fields (input files, checkpoint cadence, evaluation, ...) change nothing the checkpoints hold; they are
recorded in the history and named in the log.
"""

import os
import re

import tensorflow as tf
import yaml
from absl import logging

from bert_tf.atomic_output import write_text_atomically
from bert_tf.errors import InputError
from bert_tf.file_format import with_format_version, without_format_version
from bert_tf.optimizers.schedule import WarmupPolynomialDecay
from bert_tf.training.recipe import Recipe

RECIPE_FILE = "recipe.yaml"
ACCEPT_FLAG = "--accept_recipe_change"
_HISTORY_FILE = re.compile(r"^recipe-(\d+)\.yaml$")
# Recipe fields whose change a resumed run must accept (phase fields are per phase, at phases.N.FIELD).
_GUARDED = ("learning_rate", "num_warmup_steps", "train_batch_size")
_GUARDED_PHASE = ("name", "max_seq_length", "max_predictions_per_seq", "train_batch_size")


def recorded_recipes(model_dir):
    """The recipe files of `model_dir` in order: `recipe.yaml`, then `recipe-2.yaml`, ... (those that exist).

    >>> recorded_recipes("/nonexistent")
    []
    """
    if not tf.io.gfile.isdir(model_dir):
        return []
    numbered = sorted((int(m.group(1)), name) for name in tf.io.gfile.listdir(model_dir)
                      if (m := _HISTORY_FILE.match(name.rstrip("/"))))
    first = [RECIPE_FILE] if tf.io.gfile.exists(os.path.join(model_dir, RECIPE_FILE)) else []
    return [os.path.join(model_dir, name) for name in first + [name for _, name in numbered]]


def latest_recipe(model_dir):
    """The newest recorded recipe of `model_dir` as a dict, or None when it has none: the YAML's, with the fields
    added to recipes since it was written at their defaults (a new field is not a recipe change), and without its
    format version."""
    files = recorded_recipes(model_dir)
    if not files:
        return None
    with tf.io.gfile.GFile(files[-1], "r") as f:
        saved = without_format_version(yaml.safe_load(f.read()), files[-1])
    try:
        return as_plain_dict(Recipe.from_dict(saved, files[-1]))
    except InputError:  # a recipe this version no longer reads: compared as it is
        return saved


def as_plain_dict(recipe):
    """The recipe as its YAML file reads back (lists, not tuples), for comparing with a recorded one."""
    return yaml.safe_load(yaml.safe_dump(recipe.to_dict(), sort_keys=False))


def recipe_changes(saved, recipe):
    """(guarded, other): the differences between a recorded recipe (`saved`, a dict) and `recipe`, as
    "FIELD: saved -> now" texts; `guarded` are those a resumed run must accept, `other` the rest (a longer
    num_train_steps, its rescaled phase lengths, restart_input_on_resize, input files, ...).

    >>> recipe_changes({"learning_rate": 1e-4}, {"learning_rate": 2e-4})[0]  # doctest: +SKIP
    ['learning_rate: 0.0001 -> 0.0002']
    """
    now = as_plain_dict(recipe) if not isinstance(recipe, dict) else recipe
    guarded, other = [], []
    flat_saved, flat_now = _flatten(saved), _flatten(now)
    longer = _is_int(saved.get("num_train_steps")) and now["num_train_steps"] > saved["num_train_steps"]
    same_phases = len(saved.get("phases") or []) == len(now["phases"])
    for key in sorted(set(flat_saved) | set(flat_now), key=_key_order):
        before, after = flat_saved.get(key, "(none)"), flat_now.get(key, "(none)")
        if before == after:
            continue
        text = f"{key}: {_short(before)} -> {_short(after)}"
        parts = key.split(".")
        if parts[0] == "phases" and not same_phases:
            continue  # named once below
        if (parts[0] in ("model", "optimizer") or key in _GUARDED
                or (parts[0] == "phases" and parts[-1] in _GUARDED_PHASE)
                or (key == "num_train_steps" and not longer)
                or (parts[0] == "phases" and parts[-1] == "num_steps" and not longer)):
            guarded.append(text)
        else:
            other.append(text)
    if not same_phases:
        guarded.append(f"phases: {_phase_names(saved.get('phases'))} -> {_phase_names(now['phases'])}")
    return guarded, other


def check_resumed_recipe(model_dir, recipe, step, accept=False, model_changes=()):
    """Before a resumed run's first step: raises `InputError` (one line naming the differences and
    `--accept_recipe_change`) when `recipe` differs from the directory's latest recorded recipe in a guarded field
    or `model_changes` (texts, differences of the model's config that keep its shapes) is not empty, unless
    `accept`; logs what an accepted change does. Returns the differences (guarded + other), empty when none."""
    saved = latest_recipe(model_dir)
    if saved is None:
        return list(model_changes)
    guarded, other = recipe_changes(saved, recipe)
    guarded = list(model_changes) + [g for g in guarded if not g.startswith("model.") or not model_changes]
    if guarded and not accept:
        raise InputError(
            f"{model_dir} was trained to step {step} under another recipe ({'; '.join(guarded)}): resuming would "
            f"train its checkpoints under a recipe they were not trained with. Pass {ACCEPT_FLAG} to resume with "
            f"these changes (the directory keeps both recipes), give the flags the run was started with (its "
            f"recipe is {recorded_recipes(model_dir)[-1]}), or use a new --model_dir.")
    if guarded:
        logging.warning("Resuming at step %d with the recipe changed (%s): accepted by %s.", step,
                        "; ".join(guarded), ACCEPT_FLAG)
    if other:
        logging.info("Resuming at step %d with other settings: %s.", step, "; ".join(other))
    _log_schedule_change(saved, recipe, step)
    return guarded + other


def record_recipe(model_dir, recipe, step=None, changes=()):
    """Writes the run's recipe: `recipe.yaml` for a fresh run (a failed start's is replaced), and for a run
    resumed at `step` whose recipe differs from the latest recorded one, the next `recipe-N.yaml`; never rewrites a
    recorded recipe. Returns the path written, or None."""
    text = yaml.safe_dump(with_format_version(recipe.to_dict()), sort_keys=False)
    files = recorded_recipes(model_dir)
    if step is None or not files:
        path = os.path.join(model_dir, RECIPE_FILE)
    else:
        if latest_recipe(model_dir) == as_plain_dict(recipe):
            return None
        number = max([1] + [int(m.group(1)) for f in files if (m := _HISTORY_FILE.match(os.path.basename(f)))]) + 1
        path = os.path.join(model_dir, f"recipe-{number}.yaml")
        text = f"# from step {step}: {'; '.join(changes) or 'the same fields'}\n" + text
    write_text_atomically(path, text)
    return path


def _log_schedule_change(saved, recipe, step):
    """Logs where the phases now end and the learning rate from `step` on, when the schedule moved."""
    try:
        old_ends = _ends([p["num_steps"] for p in saved["phases"]])
        old_total, old_warmup, old_lr = saved["num_train_steps"], saved["num_warmup_steps"], saved["learning_rate"]
    except (KeyError, TypeError):
        return
    new_ends = recipe.phase_ends
    if (old_ends, old_total, old_warmup, old_lr) == (new_ends, recipe.num_train_steps, recipe.num_warmup_steps,
                                                     recipe.learning_rate):
        return
    before = float(WarmupPolynomialDecay(old_lr, old_total, old_warmup)(step))
    after = float(WarmupPolynomialDecay(recipe.learning_rate, recipe.num_train_steps, recipe.num_warmup_steps)(step))
    names = [p.name for p in recipe.phases]
    logging.warning("For the rest of the run: phases now end at steps %s (were %s); the learning rate at step %d is "
                    "%.4g (was %.4g) and decays to 0 at step %d (was %d).",
                    ", ".join(f"{n} {e}" for n, e in zip(names, new_ends)),
                    ", ".join(f"{e}" for e in old_ends), step, after, before, recipe.num_train_steps, old_total)


def _ends(steps):
    ends, total = [], 0
    for s in steps:
        total += s
        ends.append(total)
    return ends


def _flatten(values, prefix=""):
    flat = {}
    for key, value in (values or {}).items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{path}."))
        elif key == "phases" and isinstance(value, list):
            for i, phase in enumerate(value):
                flat.update(_flatten(phase, f"phases.{i}.") if isinstance(phase, dict) else {f"phases.{i}": phase})
        else:
            flat[path] = value
    return flat


def _key_order(key):
    return [int(part) if part.isdigit() else part for part in key.split(".")]


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _short(value):
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _phase_names(phases):
    return "[" + ", ".join(str(p.get("name")) for p in (phases or [])) + "]"
