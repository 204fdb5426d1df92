"""The original masked-LM rules (create_pretraining_data.create_masked_lm_predictions): `MaskingRules`, their one
description, and `StaticMasker`, which applies them to one sequence or a batch of numpy ids.

The rules, per sequence of `n` tokens (special tokens included):
1. Candidates: every position except [CLS] and [SEP]. With whole-word masking a candidate whose token starts
   with "##" joins the group of the candidate before it (even across the middle [SEP], as in the original);
   otherwise each candidate is its own group. Where a sequence comes with word starts (a word segmenter's groups,
   `text/word_segmenter.py`; 1 where a group starts), a candidate joins the group before it unless its word start
   is 1; a sequence whose word starts are all 0 (records written without them) keeps the "##" rule.
2. The groups are visited in a uniformly random order (the original shuffles them).
3. num_to_predict = min(max_predictions_per_seq, max(1, round(n * masked_lm_prob))), Python's round (half to even).
4. Greedy pass: stop once num_to_predict positions are chosen; skip a group that would exceed it.
5. Each chosen position: [MASK] with probability mask_rate (0.8), the original token keep_rate (0.1), a token
   drawn uniformly from the whole vocab random_rate (0.1) (the original: random() < 0.8, else random() < 0.5).
   The label is always the original token.
6. Positions are returned sorted.

The dynamic masking of the input pipeline (bert_tf/inputs/dynamic_masking.py) applies the same `MaskingRules`
inside tf.data.

Randomness comes in as explicit draws per position (`MaskDraws`): a uniform key that orders the groups (a group
takes the key of its first position: sorting by iid keys is a uniform shuffle), a uniform u for the 80/10/10
choice and a random vocab id. `mask_sequence` applies the rules with plain Python loops and is the reference;
`mask_batch` applies them with numpy to many sequences and gives the same result for the same draws (tested).
The original drew from one `random.Random` in a data-dependent order; the distribution of masks is the same.
"""

import dataclasses

import numpy as np

from bert_tf.errors import InputError


def num_to_predict(seq_length, masked_lm_prob, max_predictions_per_seq):
    """How many positions the original masks in a sequence of `seq_length` tokens (specials included).

    Example:
    >>> num_to_predict(128, 0.15, 20), num_to_predict(10, 0.25, 20)
    (19, 2)
    """
    return min(max_predictions_per_seq, max(1, int(round(seq_length * masked_lm_prob))))


@dataclasses.dataclass(frozen=True)
class MaskingRules:
    """What masking does, as data: how many positions to predict and what a chosen position shows.

    Args:
        masked_lm_prob: the share of tokens to predict (original default 0.15).
        max_predictions_per_seq: the cap on predictions per sequence (original default 20).
        do_whole_word_mask: mask all pieces of a word together.
        mask_rate: the share of chosen positions shown as [MASK] (0.8).
        random_rate: the share shown as a random token of the whole vocab (0.1); the rest (keep_rate, 0.1) keep
            their token.

    Example:
    >>> rules = MaskingRules(masked_lm_prob=0.15, max_predictions_per_seq=20)
    >>> rules.num_to_predict(128), rules.keep_rate
    (19, 0.1)
    >>> [rules.masked_token(7, u, random_id=9, mask_id=103) for u in (0.5, 0.85, 0.95)]
    [103, 7, 9]
    """

    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    do_whole_word_mask: bool = False
    mask_rate: float = 0.8
    random_rate: float = 0.1

    def __post_init__(self):
        if not 0.0 < self.masked_lm_prob <= 1.0:
            raise InputError(f"masked_lm_prob={self.masked_lm_prob} must lie in (0, 1]; the original uses 0.15.")
        if isinstance(self.max_predictions_per_seq, bool) or \
                not isinstance(self.max_predictions_per_seq, (int, np.integer)) or self.max_predictions_per_seq < 1:
            raise InputError(f"max_predictions_per_seq={self.max_predictions_per_seq!r} must be a positive integer; "
                             f"the original uses 20 at max_seq_length 128.")
        if not (0.0 <= self.mask_rate and 0.0 <= self.random_rate and self.mask_rate + self.random_rate <= 1.0):
            raise InputError(f"mask_rate={self.mask_rate} and random_rate={self.random_rate} must be shares that add "
                             f"up to at most 1 (the rest keeps its token); the original uses 0.8 and 0.1.")

    @property
    def keep_rate(self):
        return round(1.0 - self.mask_rate - self.random_rate, 12)

    @property
    def mask_below(self):
        """A chosen position with u < mask_below shows [MASK]."""
        return self.mask_rate

    @property
    def keep_below(self):
        """... with mask_below <= u < keep_below keeps its token, else shows a random one (0.9 exactly: the
        original's random() < 0.8, else random() < 0.5)."""
        return 1.0 - self.random_rate

    def num_to_predict(self, seq_length):
        return num_to_predict(seq_length, self.masked_lm_prob, self.max_predictions_per_seq)

    def masked_token(self, original_id, u, random_id, mask_id):
        """What one chosen position shows, from a uniform u in [0, 1)."""
        if u < self.mask_below:
            return mask_id
        return original_id if u < self.keep_below else random_id


@dataclasses.dataclass
class MaskDraws:
    """The random numbers masking consumes, one of each per position: arrays [N, T] (or [T] for one row)."""

    keys: np.ndarray        # float64 in [0, 1): orders the candidate groups
    u: np.ndarray           # float32 in [0, 1): the 80/10/10 choice
    random_ids: np.ndarray  # int32 in [0, vocab_size)

    @classmethod
    def draw(cls, rng, shape, vocab_size):
        """Fresh draws of the given shape from a numpy Generator."""
        return cls(keys=rng.random(shape), u=rng.random(shape, dtype=np.float32),
                   random_ids=rng.integers(0, vocab_size, shape, dtype=np.int32))

    def row(self, i):
        return MaskDraws(self.keys[i], self.u[i], self.random_ids[i])


@dataclasses.dataclass
class StaticMasker:
    """`MaskingRules` applied to numpy token ids of one vocab, by `mask_sequence` (reference) or `mask_batch`.

    Args:
        rules: the `MaskingRules`.
        vocab_size: random replacement ids are drawn from [0, vocab_size), the whole vocab as in the original.
        mask_id: the id of [MASK].
        special_ids: ids that are never candidates: [CLS] and [SEP] (and [PAD], which only pads).
        is_subword: bool array [vocab_size], True for "##" pieces (used with whole-word masking).

    Example:
    >>> from bert_tf.text.vocabulary import Vocabulary
    >>> vocab = Vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> masker = StaticMasker.for_vocabulary(MaskingRules(masked_lm_prob=0.4), vocab)
    >>> ids = [2, 5, 6, 3, 5, 3]
    >>> draws = MaskDraws.draw(np.random.default_rng(0), [len(ids)], vocab.size)
    >>> output_ids, positions, labels = masker.mask_sequence(ids, draws)
    >>> len(positions), all(ids[p] == label for p, label in zip(positions, labels))
    (2, True)
    """

    rules: MaskingRules
    vocab_size: int
    mask_id: int
    special_ids: tuple
    is_subword: np.ndarray

    @classmethod
    def for_vocabulary(cls, rules, vocabulary):
        """The masker of a `bert_tf.text.vocabulary.Vocabulary` holding [PAD], [CLS], [SEP] and [MASK]."""
        vocabulary.require(("[PAD]", "[CLS]", "[SEP]", "[MASK]"), "masking")
        return cls(rules, vocabulary.size, vocabulary.mask_id,
                   (vocabulary.pad_id, vocabulary.cls_id, vocabulary.sep_id), vocabulary.is_subword)

    def continues_word(self, ids, word_starts=None):
        """Whether each token joins the group of the candidate before it (with whole-word masking): a "##" piece,
        or with `word_starts` (same shape as ids) a token whose word start is 0, in rows holding any start."""
        ids = np.asarray(ids)
        is_piece = self.is_subword[ids]
        if word_starts is None:
            return is_piece
        given = np.asarray(word_starts) > 0
        return np.where(given.any(axis=-1, keepdims=True), ~given, is_piece)

    def candidate_groups(self, token_ids, word_starts=None):
        """Groups of candidate positions in sequence order (the original's `cand_indexes`)."""
        continues = self.continues_word(token_ids, word_starts)
        groups = []
        for i, token in enumerate(token_ids):
            if token in self.special_ids:
                continue
            if self.rules.do_whole_word_mask and groups and continues[i]:
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def mask_sequence(self, token_ids, draws, word_starts=None):
        """Reference for one unpadded sequence -> (output ids, sorted positions, labels), as Python lists."""
        token_ids = [int(t) for t in token_ids]
        groups = self.candidate_groups(token_ids, word_starts)
        groups.sort(key=lambda group: draws.keys[group[0]])  # stable: the shuffle of the original
        budget = self.rules.num_to_predict(len(token_ids))
        output = list(token_ids)
        chosen = []
        for group in groups:
            if len(chosen) >= budget:
                break
            if len(chosen) + len(group) > budget:
                continue
            for i in group:
                output[i] = self.rules.masked_token(token_ids[i], draws.u[i], int(draws.random_ids[i]),
                                                    self.mask_id)
                chosen.append(i)
        chosen.sort()
        return output, chosen, [token_ids[i] for i in chosen]

    def mask_batch(self, ids, lengths, draws, word_starts=None):
        """The same rules on a padded batch: ids int [N, T], lengths [N] (tokens before the padding), word_starts
        [N, T] or None.

        Returns (output ids [N, T], positions [N, P], labels [N, P], weights float32 [N, P], counts [N]) with
        P = max_predictions_per_seq, positions sorted and zero-padded, weights 1.0 on real predictions.
        """
        ids = np.asarray(ids)
        num_rows, seq_len = ids.shape
        lengths = np.asarray(lengths)
        candidate = np.arange(seq_len)[None, :] < lengths[:, None]
        for special in self.special_ids:
            candidate &= ids != special
        rules = self.rules
        # np.round rounds half to even, as Python's round in num_to_predict.
        budget = np.minimum(rules.max_predictions_per_seq,
                            np.maximum(1, np.round(lengths * rules.masked_lm_prob).astype(np.int64)))
        if rules.do_whole_word_mask:
            chosen = self._choose_whole_words(ids, candidate, budget, draws.keys, word_starts)
        else:
            chosen = self._choose_tokens(candidate, budget, draws.keys)

        u = draws.u
        replaced = np.where(u < rules.mask_below, self.mask_id, np.where(u < rules.keep_below, ids, draws.random_ids))
        output = np.where(chosen, replaced, ids)
        num_predictions = rules.max_predictions_per_seq
        counts = chosen.sum(axis=1)
        rows, cols = np.nonzero(chosen)  # row-major: each row's positions come out sorted
        slots = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
        positions = np.zeros((num_rows, num_predictions), np.int64)
        labels = np.zeros((num_rows, num_predictions), ids.dtype)
        positions[rows, slots] = cols
        labels[rows, slots] = ids[rows, cols]
        weights = (np.arange(num_predictions)[None, :] < counts[:, None]).astype(np.float32)
        return output, positions, labels, weights, counts

    def _choose_tokens(self, candidate, budget, keys):
        """Single-token groups: the greedy pass takes the `budget` candidates with the smallest keys."""
        keys = np.where(candidate, keys, np.inf)
        k = min(self.rules.max_predictions_per_seq, keys.shape[1])
        smallest = np.sort(np.partition(keys, k - 1, axis=1)[:, :k], axis=1)
        threshold = np.take_along_axis(smallest, np.minimum(budget, k)[:, None] - 1, axis=1)
        return candidate & (keys <= threshold)

    def _choose_whole_words(self, ids, candidate, budget, keys, word_starts=None):
        """Word groups visited in key order; a group that would exceed the budget is skipped."""
        num_rows, seq_len = ids.shape
        has_earlier = (np.cumsum(candidate, axis=1) - candidate) > 0
        starts = candidate & ~(self.continues_word(ids, word_starts) & has_earlier)
        group = np.where(candidate, np.cumsum(starts, axis=1) - 1, -1)  # group index of each position, per row
        num_groups = starts.sum(axis=1)
        flat_group = (np.arange(num_rows)[:, None] * seq_len + group)[candidate]
        sizes = np.bincount(flat_group, minlength=num_rows * seq_len).reshape(num_rows, seq_len)
        # Groups in shuffled order: the start positions sorted by their keys (non-starts sort last).
        order = np.argsort(np.where(starts, keys, np.inf), axis=1, kind="stable")
        ordered_group = np.take_along_axis(group, order, axis=1)  # group index of the r-th visited group
        taken = np.zeros((num_rows, seq_len), bool)
        count = np.zeros(num_rows, np.int64)
        rows = np.arange(num_rows)
        for r in range(int(num_groups.max()) if num_rows else 0):
            live = (r < num_groups) & (count < budget)
            if not live.any():
                break
            g = np.where(live, ordered_group[:, r], 0)
            size = sizes[rows, g]
            take = live & (count + size <= budget)
            count += np.where(take, size, 0)
            taken[rows[take], g[take]] = True
        return candidate & np.take_along_axis(taken, np.maximum(group, 0), axis=1)
