"""Statistics of training instances: what the summary of bert-create-pretraining-data and bert-inspect-data show.

Counted from the instance arrays (or from parsed records), summed over shards with `merge`.
"""

import dataclasses

import numpy as np

from bert_tf.instances.masking import num_to_predict
from bert_tf.records.masking_figure import draw_instance_masking
from bert_tf.records.packed_rows import FORMAT_FEATURE, split_rows


@dataclasses.dataclass
class InstanceStatistics:
    """Counts over instances; `add` a batch, `merge` another, `summary_lines` for people.

    Example:
    >>> stats = InstanceStatistics(max_seq_length=128, max_predictions_per_seq=20)
    >>> stats.add(lengths, input_ids, positions, labels, counts, next_sentence_labels, None,
    ...           vocab)  # doctest: +SKIP
    >>> print("\\n".join(stats.summary_lines()))  # doctest: +SKIP
    """

    max_seq_length: int
    max_predictions_per_seq: int
    instances: int = 0
    random_next: int = 0
    one_sentence_chunks: int = -1  # -1: unknown (records do not say)
    tokens: int = 0
    predictions: int = 0
    masked: int = 0     # replaced by [MASK]
    kept: int = 0       # the original token kept
    replaced: int = 0   # a random token
    at_cap: int = 0     # instances whose predictions hit max_predictions_per_seq
    rows: int = 0       # packed rows holding the instances; 0: one instance per record
    unknown: int = 0    # [UNK] tokens among the instances' tokens (before masking)
    length_histogram: np.ndarray = None
    predictions_histogram: np.ndarray = None

    def __post_init__(self):
        if self.length_histogram is None:
            self.length_histogram = np.zeros(self.max_seq_length + 1, np.int64)
        if self.predictions_histogram is None:
            self.predictions_histogram = np.zeros(self.max_predictions_per_seq + 1, np.int64)

    def add(self, lengths, input_ids, positions, labels, counts, next_sentence_labels, one_sentence_chunks, vocab):
        """A batch: lengths [N], masked input ids [N, T], positions/labels [N, P], counts [N] real predictions,
        next_sentence_labels [N] (1 = random next), one_sentence_chunks [N] bool or None when unknown; `vocab` (a
        `Vocabulary`) gives the ids of [MASK] and [UNK]."""
        mask_id, unk_id = vocab.mask_id, vocab.unk_id
        lengths, counts = np.asarray(lengths), np.asarray(counts)
        self.instances += len(lengths)
        self.random_next += int(np.sum(next_sentence_labels))
        if one_sentence_chunks is not None:
            self.one_sentence_chunks = max(self.one_sentence_chunks, 0) + int(np.sum(one_sentence_chunks))
        self.tokens += int(lengths.sum())
        self.predictions += int(counts.sum())
        real = np.arange(positions.shape[1])[None, :] < counts[:, None]
        shown = np.take_along_axis(np.asarray(input_ids), np.asarray(positions), axis=1)
        is_mask = real & (shown == mask_id)
        is_kept = real & ~is_mask & (shown == labels)
        self.masked += int(is_mask.sum())
        self.kept += int(is_kept.sum())
        self.replaced += int(real.sum() - is_mask.sum() - is_kept.sum())
        # The tokens before masking: the non-padding input ids, with the masked positions' originals (labels).
        input_ids = np.asarray(input_ids)
        not_padding = np.arange(input_ids.shape[1])[None, :] < lengths[:, None]
        self.unknown += int(np.sum(not_padding & (input_ids == unk_id)) - np.sum(real & (shown == unk_id))
                            + np.sum(real & (np.asarray(labels) == unk_id)))
        self.at_cap += int(np.sum(counts >= self.max_predictions_per_seq))
        self.length_histogram += np.bincount(lengths, minlength=self.max_seq_length + 1)[:self.max_seq_length + 1]
        self.predictions_histogram += np.bincount(counts, minlength=self.max_predictions_per_seq + 1)

    def merge(self, other):
        for field in ("instances", "random_next", "tokens", "predictions", "masked", "kept", "replaced", "at_cap",
                      "rows", "unknown"):
            setattr(self, field, getattr(self, field) + getattr(other, field))
        if other.one_sentence_chunks >= 0:
            self.one_sentence_chunks = max(self.one_sentence_chunks, 0) + other.one_sentence_chunks
        self.length_histogram = self.length_histogram + other.length_histogram
        self.predictions_histogram = self.predictions_histogram + other.predictions_histogram
        return self

    def expected_predictions(self, masked_lm_prob):
        """The sum of num_to_predict over the instances' lengths (what the rules ask for)."""
        return sum(int(n) * min(num_to_predict(length, masked_lm_prob, self.max_predictions_per_seq), length - 3)
                   for length, n in enumerate(self.length_histogram) if n)

    def length_percentiles(self, qs=(5, 50, 95)):
        if not self.instances:
            return {q: 0 for q in qs}
        cumulative = np.cumsum(self.length_histogram)
        return {q: int(np.searchsorted(cumulative, q / 100 * self.instances)) for q in qs}

    def summary_lines(self, masked_lm_prob=None, pair_rules=None):
        """Lines for people; `masked_lm_prob` and `pair_rules` (a `SentencePairRules`) add what the rules expect."""
        n, p = max(self.instances, 1), max(self.predictions, 1)
        lines = [f"instances: {self.instances}"]
        nsp = f"next sentence: {self.random_next / n:.2%} random next (label 1)"
        if self.one_sentence_chunks >= 0 and pair_rules is not None:
            single = self.one_sentence_chunks / n
            nsp += (f"; expected {pair_rules.expected_random_next_share(single):.2%} = "
                    f"{pair_rules.random_next_prob:.0%} + {1 - pair_rules.random_next_prob:.0%} of the {single:.2%} "
                    f"one-sentence chunks (always random next)")
        lines.append(nsp)
        mean_length = self.tokens / n
        pct = self.length_percentiles()
        lines.append(f"length: mean {mean_length:.1f}, p5 {pct[5]}, median {pct[50]}, p95 {pct[95]}, "
                     f"max {self.max_seq_length} reached by {self.length_histogram[-1] / n:.2%}")
        lines.append(unknown_line(self.unknown, self.tokens))
        rate = f"masked LM: {self.predictions} predictions = {self.predictions / max(self.tokens, 1):.2%} of tokens"
        if masked_lm_prob is not None:
            rate += f" (rules ask for {self.expected_predictions(masked_lm_prob)})"
        lines.append(rate + f"; {self.predictions / n:.2f} per instance, {self.at_cap / n:.2%} at the cap of "
                            f"{self.max_predictions_per_seq}")
        lines.append(f"masked positions: [MASK] {self.masked / p:.2%}, random token {self.replaced / p:.2%}, "
                     f"kept {self.kept / p:.2%}")
        lines.append(self.rows_line())
        return lines

    def non_padding_share(self, rows=None):
        """The share of a record's tokens that are not padding, over `rows` records (default: this data's)."""
        rows = self.rows or self.instances if rows is None else rows
        return self.tokens / max(rows * self.max_seq_length, 1)

    def rows_line(self):
        """Records, instances per record and the share of non-padding tokens (packed and one per record)."""
        unpacked = f"{self.non_padding_share(self.instances):.2%} non-padding tokens with one instance per record"
        if not self.rows:
            return f"records: {self.instances}, one instance each; {unpacked}"
        return (f"packed rows: {self.rows}, {self.instances / self.rows:.2f} instances per row; "
                f"{self.non_padding_share():.2%} non-padding tokens ({unpacked})")


def unknown_line(unknown, tokens):
    """The [UNK] share of the tokens for people: above a few in ten thousand, the vocab was learned from other text
    or with other settings (lower-casing, accents) than the instances were tokenized with.

    >>> unknown_line(3, 2000)
    '[UNK]: 3 of 2000 tokens (0.150%)'
    """
    return f"[UNK]: {unknown} of {tokens} tokens ({unknown / max(tokens, 1):.3%})"


def statistics_of_records(batches, max_seq_length, max_predictions_per_seq, vocab):
    """`InstanceStatistics` of record batches (from `bert_tf.records.reader.read_records`) written with `vocab` (a
    `Vocabulary`); packed rows are counted by the instances they hold, and their rows."""
    stats = InstanceStatistics(max_seq_length, max_predictions_per_seq)
    for batch in batches:
        if FORMAT_FEATURE in batch:
            stats.rows += len(batch["input_ids"])
            batch, _ = split_rows(batch, max_predictions_per_seq)
        stats.add(batch["input_mask"].sum(axis=1), batch["input_ids"], batch["masked_lm_positions"],
                  batch["masked_lm_ids"], batch["masked_lm_weights"].sum(axis=1).astype(np.int64),
                  batch["next_sentence_labels"][:, 0], None, vocab)
    return stats


def statistics_figure(stats, title="", instance=None, vocab=None, mask_id=None):
    """The matplotlib Figure of `plot_statistics`: the length histogram, predictions per instance and the
    [MASK]/random/kept split; with `instance` (a record of the original format) and its `vocab` and `mask_id`, a
    second row draws that instance's tokens coloured by what the masking did (`draw_instance_masking`).

    Example:
    >>> figure = statistics_figure(stats, instance=first_record, vocab=tokens, mask_id=103)  # doctest: +SKIP
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if instance is None:
        figure, axes = plt.subplots(1, 3, figsize=(15, 4))
    else:
        figure = plt.figure(figsize=(15, 8.5))
        grid = figure.add_gridspec(2, 3, height_ratios=(1, 1.15))
        axes = [figure.add_subplot(grid[0, i]) for i in range(3)]
        draw_instance_masking(figure.add_subplot(grid[1, :]), instance, vocab, mask_id)
    axes[0].bar(np.arange(len(stats.length_histogram)), stats.length_histogram, width=1.0)
    axes[0].set(title="instance length (tokens, specials included)", xlabel="length", ylabel="instances",
                yscale="log")
    axes[1].bar(np.arange(len(stats.predictions_histogram)), stats.predictions_histogram)
    axes[1].set(title="masked LM predictions per instance", xlabel="predictions", ylabel="instances")
    split = [stats.masked, stats.replaced, stats.kept]
    total = max(sum(split), 1)
    bars = axes[2].bar(["[MASK]", "random token", "kept"], [100 * v / total for v in split])
    axes[2].bar_label(bars, fmt="%.1f%%")
    axes[2].set(title="what a predicted position shows", ylabel="% of predictions", ylim=(0, 100))
    figure.suptitle(title or f"{stats.instances} instances, {stats.random_next / max(stats.instances, 1):.1%} "
                             f"random next")
    figure.tight_layout()
    return figure


def plot_statistics(stats, path, title="", instance=None, vocab=None, mask_id=None):
    """Writes `statistics_figure(...)` as a PNG at `path`."""
    import matplotlib.pyplot as plt

    figure = statistics_figure(stats, title, instance, vocab, mask_id)
    figure.savefig(path, dpi=80)
    plt.close(figure)
