"""The original masked-LM rules (create_pretraining_data.create_masked_lm_predictions), one sequence or a batch.

The rules, per sequence of `n` tokens (special tokens included):
1. Candidates: every position except [CLS] and [SEP]. With whole-word masking a candidate whose token starts
   with "##" joins the group of the candidate before it (even across the middle [SEP], as in the original);
   otherwise each candidate is its own group.
2. The groups are visited in a uniformly random order (the original shuffles them).
3. num_to_predict = min(max_predictions_per_seq, max(1, round(n * masked_lm_prob))), Python's round (half to even).
4. Greedy pass: stop once num_to_predict positions are chosen; skip a group that would exceed it.
5. Each chosen position: [MASK] with probability 0.8, the original token 0.1, a token drawn uniformly from the
   whole vocab 0.1 (the original: random() < 0.8, else random() < 0.5). The label is always the original token.
6. Positions are returned sorted.

Randomness comes in as explicit draws per position (`MaskDraws`): a uniform key that orders the groups (a group
takes the key of its first position: sorting by iid keys is a uniform shuffle), a uniform for the 80/10/10
choice and a random vocab id. `mask_sequence` applies the rules with plain Python loops and is the reference;
`mask_batch` applies them with numpy to many sequences and gives the same result for the same draws (tested).
The original drew from one `random.Random` in a data-dependent order; the distribution of masks is the same.

Example:
>>> rules = MaskingRules(masked_lm_prob=0.15, max_predictions_per_seq=20, vocab_size=30522, mask_id=103,
...                      special_ids=(0, 101, 102), is_subword=is_subword, do_whole_word_mask=False)
>>> draws = MaskDraws.draw(np.random.default_rng(0), [len(ids)], rules.vocab_size)
>>> output_ids, positions, labels = rules.mask_sequence(ids, draws.row(0))
"""

import dataclasses

import numpy as np

MASK_PROB = 0.8   # a chosen position becomes [MASK] when u < 0.8,
KEEP_BELOW = 0.9  # keeps its token when 0.8 <= u < 0.9, else takes the random vocab token


def num_to_predict(seq_length, masked_lm_prob, max_predictions_per_seq):
    """How many positions the original masks in a sequence of `seq_length` tokens (specials included)."""
    return min(max_predictions_per_seq, max(1, int(round(seq_length * masked_lm_prob))))


def masked_token(original_id, u, random_id, mask_id):
    """The 80/10/10 rule for one chosen position, from a uniform u in [0, 1)."""
    if u < MASK_PROB:
        return mask_id
    return original_id if u < KEEP_BELOW else random_id


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
class MaskingRules:
    """The masking configuration of create_pretraining_data, applied by `mask_sequence` or `mask_batch`.

    Args:
        masked_lm_prob: the share of tokens to predict (original default 0.15).
        max_predictions_per_seq: the cap on predictions per sequence (original default 20).
        vocab_size: random replacement ids are drawn from [0, vocab_size), the whole vocab as in the original.
        mask_id: the id of [MASK].
        special_ids: ids that are never candidates: [CLS] and [SEP] (and [PAD], which only pads).
        is_subword: bool array [vocab_size], True for "##" pieces (used with whole-word masking).
        do_whole_word_mask: mask all pieces of a word together.
    """

    masked_lm_prob: float
    max_predictions_per_seq: int
    vocab_size: int
    mask_id: int
    special_ids: tuple
    is_subword: np.ndarray
    do_whole_word_mask: bool = False

    def candidate_groups(self, token_ids):
        """Groups of candidate positions in sequence order (the original's `cand_indexes`)."""
        groups = []
        for i, token in enumerate(token_ids):
            if token in self.special_ids:
                continue
            if self.do_whole_word_mask and groups and self.is_subword[token]:
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def mask_sequence(self, token_ids, draws):
        """Reference for one unpadded sequence -> (output ids, sorted positions, labels), as Python lists."""
        token_ids = [int(t) for t in token_ids]
        groups = self.candidate_groups(token_ids)
        groups.sort(key=lambda group: draws.keys[group[0]])  # stable: the shuffle of the original
        budget = num_to_predict(len(token_ids), self.masked_lm_prob, self.max_predictions_per_seq)
        output = list(token_ids)
        chosen = []
        for group in groups:
            if len(chosen) >= budget:
                break
            if len(chosen) + len(group) > budget:
                continue
            for i in group:
                output[i] = masked_token(token_ids[i], draws.u[i], int(draws.random_ids[i]), self.mask_id)
                chosen.append(i)
        chosen.sort()
        return output, chosen, [token_ids[i] for i in chosen]

    def mask_batch(self, ids, lengths, draws):
        """The same rules on a padded batch: ids int [N, T], lengths [N] (tokens before the padding).

        Returns (output ids [N, T], positions [N, P], labels [N, P], weights float32 [N, P], counts [N]) with
        P = max_predictions_per_seq, positions sorted and zero-padded, weights 1.0 on real predictions.
        """
        ids = np.asarray(ids)
        num_rows, seq_len = ids.shape
        lengths = np.asarray(lengths)
        candidate = np.arange(seq_len)[None, :] < lengths[:, None]
        for special in self.special_ids:
            candidate &= ids != special
        budget = np.minimum(self.max_predictions_per_seq,
                            np.maximum(1, np.round(lengths * self.masked_lm_prob).astype(np.int64)))
        if self.do_whole_word_mask:
            chosen = self._choose_whole_words(ids, candidate, budget, draws.keys)
        else:
            chosen = self._choose_tokens(candidate, budget, draws.keys)

        u = draws.u
        replaced = np.where(u < MASK_PROB, self.mask_id, np.where(u < KEEP_BELOW, ids, draws.random_ids))
        output = np.where(chosen, replaced, ids)
        num_predictions = self.max_predictions_per_seq
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
        k = min(self.max_predictions_per_seq, keys.shape[1])
        smallest = np.sort(np.partition(keys, k - 1, axis=1)[:, :k], axis=1)
        threshold = np.take_along_axis(smallest, np.minimum(budget, k)[:, None] - 1, axis=1)
        return candidate & (keys <= threshold)

    def _choose_whole_words(self, ids, candidate, budget, keys):
        """Word groups visited in key order; a group that would exceed the budget is skipped."""
        num_rows, seq_len = ids.shape
        has_earlier = (np.cumsum(candidate, axis=1) - candidate) > 0
        starts = candidate & ~(self.is_subword[ids] & has_earlier)
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
