"""What a run checks before its first step, so that a bad input fails in seconds, not hours in: every phase's
(its `mixed_inputs` too) and the eval's record files exist and their first records have the lengths the recipe
gives and ids the model's embeddings hold (`records.checker.check_record_files`), and packed rows have the
prediction slots that dynamic masking at the recipe's rate can fill."""

import math

from bert_tf.errors import InputError
from bert_tf.records.packed_rows import default_predictions_per_row
from bert_tf.text.file_patterns import expand_file_patterns


def run_inputs(recipe):
    """(what, pattern, max_seq_length, max_predictions_per_seq) of every record input a run reads: each phase's
    (its `mixed_inputs` too), then the eval's.

    >>> [what for what, *_ in run_inputs(recipe)]  # doctest: +SKIP
    ["phase 'seq128' (--input_file)", "the eval input (--eval_input_file)"]
    """
    last = recipe.phases[-1]
    inputs = []
    for p in recipe.phases:
        inputs.append((f"phase {p.name!r} (--input_file)", p.input_file, p.max_seq_length, p.max_predictions_per_seq))
        inputs += [(f"phase {p.name!r} mixed_inputs[{i}]", s.input_file, p.max_seq_length, p.max_predictions_per_seq)
                   for i, s in enumerate(p.mixed_inputs)]
    if recipe.eval.input_file:
        inputs.append(("the eval input (--eval_input_file)", recipe.eval.input_file,
                       recipe.eval.max_seq_length or last.max_seq_length,
                       recipe.eval.max_predictions_per_seq or last.max_predictions_per_seq))
    return inputs


def check_run_inputs_exist(recipe):
    """Raises `InputError` naming the first input whose pattern matches no file (or a directory): the part of
    `check_run_inputs` that needs no TensorFlow, so that a command answers a mistyped path at once.

    >>> check_run_inputs_exist(recipe)  # doctest: +SKIP
    """
    for what, pattern, _, _ in run_inputs(recipe):
        try:
            expand_file_patterns(pattern)
        except (ValueError, OSError) as error:
            raise InputError(f"{what}: {_detail(error)}") from None


def check_run_inputs(recipe, config, masker=None, vocab=None, record_counts=None):
    """Raises `InputError` naming the input (phase or eval), the file and the fix for the first input a run cannot
    use; `masker` (dynamic masking) needs only the records' input_ids. With `vocab` (a `Vocabulary`) the records'
    [CLS], [SEP] and [MASK] ids must be its own. `record_counts`, a dict, receives each input pattern's number of
    records (counted, or estimated from the file sizes; None when unknown).

    >>> check_run_inputs(recipe, config)  # doctest: +SKIP
    """
    from bert_tf.records.checker import check_record_files

    inputs = run_inputs(recipe)
    masked_again = len(inputs) - (1 if recipe.eval.input_file else 0)  # the eval keeps its records' own masks
    for index, (what, pattern, max_seq_length, max_predictions_per_seq) in enumerate(inputs):
        try:
            stats = {}
            files = check_record_files(pattern, max_seq_length, max_predictions_per_seq, config.vocab_size,
                                       config.type_vocab_size, masks_drawn_again=masker is not None, vocab=vocab,
                                       stats=stats)
            if record_counts is not None:
                record_counts[pattern] = stats.get("records")
            if masker is not None and index < masked_again:
                check_prediction_slots(files, max_predictions_per_seq, masker.rules.masked_lm_prob)
        except (ValueError, OSError) as error:
            raise InputError(f"{what}: {_detail(error)}") from None


def check_prediction_slots(files, max_predictions_per_seq, masked_lm_prob):
    """Raises `InputError` when `files` hold packed rows with fewer prediction slots than dynamic masking at
    `masked_lm_prob` can draw for a row (`default_predictions_per_row`: each instance capped at
    `max_predictions_per_seq`), naming the slots, the rate and the two fixes; records of one instance pass.

    >>> check_prediction_slots(["packed-512.tfrecord"], 80, 0.3)  # doctest: +SKIP
    Traceback (most recent call last):
    bert_tf.errors.InputError: The packed rows of packed-512.tfrecord have 80 prediction slots, but dynamic masking ...
    """
    from bert_tf.records.schema import read_schema

    layout = read_schema(files).row_layout
    if layout is None:
        return
    seq, instances, slots = layout.max_seq_length, layout.max_instances_per_row, layout.max_predictions_per_row
    needed = default_predictions_per_row(seq, max_predictions_per_seq, instances, masked_lm_prob)
    if needed <= slots:
        return
    fitting = math.floor(1000 * (slots - instances) / seq) / 1000
    raise InputError(
        f"The packed rows of {files[0]} have {slots} prediction slots, but dynamic masking at masked_lm_prob="
        f"{masked_lm_prob:g} can draw up to {needed} for a row of {seq} tokens and {instances} instances: write the "
        f"records again with bert-create-pretraining-data --pack --masked_lm_prob={masked_lm_prob:g} (slots for "
        f"that rate), or mask at most {fitting:g} of the tokens (--set=dynamic_masking.masked_lm_prob={fitting:g}).")


def _detail(error):
    return f"{error.filename}: {error.strerror}" if isinstance(error, OSError) and error.filename else str(error)
