"""The settings of create_pretraining_data (and of its Beam pipeline), with the original flags' names and defaults,
checked on creation by the shared config schema (`bert_tf.config_schema`)."""

import dataclasses
from typing import Optional

from bert_tf.config_schema import Section, check_field_types, field_option
from bert_tf.instances.masking import MaskingRules
from bert_tf.instances.sentence_pairs import SentencePairRules
from bert_tf.records.packed_rows import DEFAULT_MAX_INSTANCES_PER_ROW, RowLayout
from bert_tf.text.word_segmenter import WORD_SEGMENTERS

WORD_SEGMENTER_NAMES = tuple(sorted(WORD_SEGMENTERS))

# `--help`'s groups of the options that are not the original algorithm's.
PACKED_GROUP = "packed rows (several instances per record)"
HOW_GROUP = "how it runs"
# Megabytes of text a worker turns into instances at a time.
DEFAULT_SHARD_SIZE_MB = 0.5


@dataclasses.dataclass(frozen=True)
class InstanceOptions(Section):
    """How documents become training instances (the original script's flags) and the records they are written as.

    Example:
    >>> InstanceOptions(max_seq_length=128, max_predictions_per_seq=20, dupe_factor=5).pair_rules.max_num_tokens
    125
    >>> InstanceOptions(names="v2", gzip=True).names
    'v2'
    """

    HELP_GROUP = "the original algorithm"
    # The rules' settings default to the rules' own defaults (the original's), so each default has one owner. A
    # field's help makes it a flag of bert-create-pretraining-data and its Beam pipeline (`cli/config_flags.py`).
    max_seq_length: int = field_option(SentencePairRules.max_seq_length, "Maximum sequence length.")
    max_predictions_per_seq: int = field_option(MaskingRules.max_predictions_per_seq,
                                                "Maximum number of masked LM predictions per sequence.")
    masked_lm_prob: float = field_option(MaskingRules.masked_lm_prob, "Masked LM probability.")
    short_seq_prob: float = field_option(SentencePairRules.short_seq_prob, "Probability of creating sequences which "
                                                                           "are shorter than the maximum length.")
    dupe_factor: int = field_option(10, "Number of times to duplicate the input data (with different masks).")
    do_whole_word_mask: bool = field_option(MaskingRules.do_whole_word_mask,
                                            "Whether to use whole word masking rather than per-WordPiece masking.")
    random_seed: int = field_option(12345, "Random seed for data generation.")
    # Beyond the original: Chinese whole-word masking (text/word_segmenter.py). Not a vocab setting: the ids stay the
    # characters' ids, only the masking groups change.
    word_segmenter: Optional[str] = field_option(
        None, "With --do_whole_word_mask: a word segmenter (jieba, the `chinese` extra) groups the characters of "
              "each word for masking; ids stay the characters' ids, and the records gain word_starts "
              "(docs/record_format.md). Not in the original.", choices=WORD_SEGMENTER_NAMES)
    # An option beyond the original: several instances per record (records/packed_rows.py).
    pack: bool = field_option(False, "Write packed rows: up to --max_instances_per_row instances per record, each "
                                     "whole, attention kept within each (docs/record_format.md). Not in the original.",
                             group=PACKED_GROUP)
    max_instances_per_row: int = field_option(DEFAULT_MAX_INSTANCES_PER_ROW,
                                              "With --pack: instances per row at most (Krell et al. use 3).",
                                              group=PACKED_GROUP)
    max_predictions_per_row: Optional[int] = field_option(  # None: enough for any row (`default_predictions_per_row`)
        None, "With --pack: masked-LM slots per row, shared by its instances (default: "
              "ceil(max_seq_length * masked_lm_prob) + max_instances_per_row, enough for any row).", group=PACKED_GROUP)
    # Text per shard: the unit of shuffling, random next documents and parallel work (the output depends on it).
    shard_size_mb: float = field_option(DEFAULT_SHARD_SIZE_MB, "Text per shard: the unit of shuffling, random-next "
                                                               "documents and parallel work. The output depends on it "
                                                               "(and on the seed).", group=HOW_GROUP)
    names: str = field_option("v1", "Feature names: v1 = input_ids/segment_ids (the original), v2 = "
                                    "input_word_ids/input_type_ids (Model Garden).", choices=("v1", "v2"),
                              group=HOW_GROUP)
    gzip: bool = field_option(False, "Write GZIP-compressed TFRecords.", group=HOW_GROUP)

    def __post_init__(self):
        check_field_types(self)
        self.pair_rules  # checks max_seq_length and short_seq_prob
        super().__post_init__()  # the rules below
        self.masking_rules  # checks masked_lm_prob
        self.row_layout  # checks the packing settings

    def _rules(self):
        return (("max_predictions_per_seq", 1 <= self.max_predictions_per_seq <= self.max_seq_length,
                 f"must lie in [1, max_seq_length={self.max_seq_length}]; the original uses 20 at 128 (about "
                 f"max_seq_length * masked_lm_prob)"),
                ("dupe_factor", self.dupe_factor >= 1,
                 "must be at least 1 (the number of passes over the corpus, each with new masks); the original uses "
                 "10, its README 5"),
                ("shard_size_mb", self.shard_size_mb > 0, "must be positive (0.5 is a good size)"),
                ("word_segmenter", self.word_segmenter is None or self.do_whole_word_mask,
                 "groups characters for whole-word masking only: add --do_whole_word_mask, or leave "
                 "--word_segmenter out"))

    @property
    def row_layout(self):
        """The `RowLayout` of packed rows (None: one instance per record, the original format).

        Example:
        >>> InstanceOptions(max_seq_length=512, max_predictions_per_seq=76, pack=True).row_layout
        RowLayout(max_seq_length=512, max_instances_per_row=3, max_predictions_per_row=80)
        """
        if not self.pack:
            return None
        return RowLayout.for_instances(self.max_seq_length, self.max_predictions_per_seq, self.masked_lm_prob,
                                       self.max_instances_per_row, self.max_predictions_per_row)

    @property
    def masking_rules(self):
        """The `MaskingRules` these options ask for."""
        return MaskingRules(self.masked_lm_prob, self.max_predictions_per_seq, self.do_whole_word_mask)

    @property
    def pair_rules(self):
        """The `SentencePairRules` these options ask for."""
        return SentencePairRules(self.max_seq_length, self.short_seq_prob)
