"""What a run checks before its first step, so that a bad input fails in seconds, not hours in: every phase's
(its `mixed_inputs` too) and the eval's record files exist and their first records have the lengths the recipe
gives and ids the model's embeddings hold (`records.checker.check_record_files`)."""

from bert_tf.errors import InputError
from bert_tf.records.checker import check_record_files


def check_run_inputs(recipe, config, masker=None, vocab=None, record_counts=None):
    """Raises `InputError` naming the input (phase or eval), the file and the fix for the first input a run cannot
    use; `masker` (dynamic masking) needs only the records' input_ids. With `vocab` (a `Vocabulary`) the records'
    [CLS], [SEP] and [MASK] ids must be its own. `record_counts`, a dict, receives each input pattern's number of
    records (counted, or estimated from the file sizes; None when unknown).

    >>> check_run_inputs(recipe, config)  # doctest: +SKIP
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
    for what, pattern, max_seq_length, max_predictions_per_seq in inputs:
        try:
            stats = {}
            check_record_files(pattern, max_seq_length, max_predictions_per_seq, config.vocab_size,
                               config.type_vocab_size, masks_drawn_again=masker is not None, vocab=vocab,
                               stats=stats)
            if record_counts is not None:
                record_counts[pattern] = stats.get("records")
        except (ValueError, OSError) as error:
            detail = (f"{error.filename}: {error.strerror}" if isinstance(error, OSError) and error.filename
                      else str(error))
            raise InputError(f"{what}: {detail}") from None
