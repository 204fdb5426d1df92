"""`InputSpec`: what one input pipeline reads and how, as one frozen value that `pretraining_dataset` takes whole.

A run builds one per phase from its recipe (`training/pretraining.py`), and the evaluation's is derived from the
last phase's. The defaults of the input pipeline are owned here (the recipe's fields default to them). No
TensorFlow here: a recipe imports these defaults without it.
"""

import dataclasses
import math
import os
from typing import Any, Optional, Sequence, Union

from bert_tf.errors import InputError

# Records in the shuffle buffer: the original's 100. An iterator checkpoint stores the buffer, so keep it moderate
# (the records are already shuffled when written, as in the original).
DEFAULT_SHUFFLE_BUFFER = 100
DEFAULT_PACKING_WINDOW = 256  # unpacked records packed together (more: fuller rows, more memory)


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """The records one pre-training input pipeline reads, and how it batches, shuffles, masks and packs them.

    Args:
        input_patterns: a file, a glob, a comma-separated string of them (the original `--input_file`) or a list.
        max_seq_length, max_predictions_per_seq: the lengths the records were written with; records of another
            length fail with the expected and found shapes.
        batch_size: the batch THIS pipeline yields, i.e. global batch / `input_context.num_input_pipelines`. With
            one pipeline per host (bert-pretrain: a plain `iter(dataset)` on each host's CPU, split across that
            host's replicas), it is the per-host batch; inside `distribute_datasets_from_function` (one pipeline per
            replica) it is `input_context.get_per_replica_batch_size(global_batch_size)`.
        is_training: shuffle and repeat forever (True), or one pass in file order (False).
        names: "auto" (from the first record), "v1" (`input_ids`, `segment_ids`) or "v2" (`input_word_ids`,
            `input_type_ids`).
        compression: "auto" (gzip recognised by its magic bytes, per file), "" , "GZIP" or "ZLIB".
        shuffle_buffer: records in the shuffle buffer (`DEFAULT_SHUFFLE_BUFFER`, the original's 100).
        seed: makes the file order, record order and dynamic masks reproducible (needed to resume exactly from
            an iterator checkpoint); None draws one.
        cycle_length: files read at once (default min(8, files of this pipeline)).
        num_parallel_calls: parallelism of reading and parsing (None: `tf.data.AUTOTUNE`).
        masker: a `DynamicMasker` to mask on the fly (RoBERTa's dynamic masking): the records then need only
            `input_ids` (up to max_seq_length, padded here); masks already in them are undone and drawn again,
            a new draw each epoch.
        row_layout: a `RowLayout` to pack unpacked records into rows of several instances (packed rows,
            records/packed_rows.py), `packing_window` records at a time; packed records (`--pack`) are read as
            rows whatever it says, and must have this layout when it is given. Packed batches add
            `input_position_ids`, `input_instance_ids` [batch_size, max_seq_length] and `next_sentence_positions`,
            `next_sentence_weights` [batch_size, K]; `next_sentence_labels` is [batch_size, K] and the masked-LM
            features have the row's prediction slots. `batch_size` counts rows. With a `masker`, the masks are
            drawn per instance (its own budget and cap), before packing or on the packed rows.
        packing_window: unpacked records packed together (`DEFAULT_PACKING_WINDOW`).
        weights: several input sets mixed (training only), e.g. a general corpus replayed beside a domain's:
            `input_patterns` is then a list of input sets (each a pattern string as above) with one positive weight
            each (normalised to sum to 1). Each set is read as one input is (sharded, interleaved, repeated, with
            its own shuffle buffer), and records are drawn from the sets at these weights
            (`tf.data.Dataset.sample_from_datasets`, seeded from `seed`) before parsing, masking and packing. The
            sets' first records must match the lengths asked for and each other's feature names.
        drop_remainder: False keeps a last partial batch (not when training: a training pipeline repeats, and its
            shapes stay static); its batch dimension is then unknown.

    Example:
    >>> spec = InputSpec("out/wiki-*.tfrecord", 128, 20, batch_size=32, seed=1)
    >>> spec.shuffle_buffer, spec.is_training
    (100, True)
    >>> held_out = dataclasses.replace(spec, input_patterns="out/heldout.tfrecord", is_training=False,
    ...                                drop_remainder=False)
    >>> InputSpec("out/wiki-*.tfrecord", 128, 20, batch_size=0)
    Traceback (most recent call last):
    bert_tf.errors.InputError: batch_size=0 must be a positive integer.
    """

    input_patterns: Union[str, os.PathLike, Sequence[str]]
    max_seq_length: int
    max_predictions_per_seq: int
    batch_size: int
    is_training: bool = True
    names: str = "auto"
    compression: str = "auto"
    shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER
    seed: Optional[int] = None
    cycle_length: Optional[int] = None
    num_parallel_calls: Optional[int] = None
    masker: Any = None
    row_layout: Any = None
    packing_window: int = DEFAULT_PACKING_WINDOW
    weights: Optional[Sequence[float]] = None
    drop_remainder: bool = True

    def __post_init__(self):
        for name in ("max_seq_length", "max_predictions_per_seq", "batch_size", "shuffle_buffer", "packing_window"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputError(f"{name}={value!r} must be a positive integer.")
        if not self.drop_remainder and self.is_training:
            raise InputError("drop_remainder=False is for evaluation (is_training=False): training batches keep "
                             "static shapes.")
        if self.weights is not None:
            self._check_weights()

    def _check_weights(self):
        if not self.is_training:
            raise InputError(f"weights={self.weights!r}: input sets are mixed only for training (is_training=True); "
                             f"evaluate on one input (a pattern string or a list of files), without weights.")
        if isinstance(self.input_patterns, (str, os.PathLike)) or len(self.input_patterns) != len(self.weights):
            raise InputError(f"weights={self.weights!r} needs one input set per weight, got input_patterns="
                             f"{self.input_patterns!r}: pass a list of pattern strings, one per weight.")
        for weight in self.weights:
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
                raise InputError(f"weights={self.weights!r} must be positive finite numbers (a share of the "
                                 f"records each).")

    @property
    def input_sets(self):
        """The input sets to read: [input_patterns] without weights, else the list of sets, one per weight."""
        return [self.input_patterns] if self.weights is None else list(self.input_patterns)
