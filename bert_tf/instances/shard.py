"""One shard of documents -> its shuffled, masked, serialized training instances (numpy only, no TensorFlow).

This is the unit of work of both the multiprocessing pipeline and the Beam pipeline. A shard is processed as the
original processes its whole corpus: its documents shuffled, `dupe_factor` passes of
`instances_from_document` over them (random next segments drawn from the shard's documents), static masks, and
the instances shuffled. Each shard has its own seed, derived from the run's seed and the shard's index, so the
result does not depend on which worker runs it or when.
"""

import dataclasses
import itertools
import random
from typing import Optional

import numpy as np

from bert_tf.instances.best_fit_rows import pack_instances
from bert_tf.instances.masking import MaskDraws, StaticMasker
from bert_tf.instances.sentence_pairs import instances_from_document
from bert_tf.instances.statistics import InstanceStatistics
from bert_tf.records.example_encoder import ExampleEncoder
from bert_tf.records.feature_spec import V1_FEATURES, record_name
from bert_tf.records.packed_rows import PACKED_FEATURES
from bert_tf.records.word_starts import WORD_STARTS_FEATURE, instance_word_starts
from bert_tf.text.packing import pack_spans


@dataclasses.dataclass
class TokenizedShard:
    """Documents as ragged token ids: document d has sentences [document_splits[d], document_splits[d + 1]),
    sentence s has tokens token_ids[sentence_splits[s]:sentence_splits[s + 1]].

    Example:
    >>> documents = [["Jesus wept."], ["Amen.", "Selah."]]  # doctest: +SKIP
    >>> shard = TokenizedShard.from_documents(0, documents, tokenizer, CorpusCounts())  # doctest: +SKIP
    >>> shard.sentence_splits.tolist(), shard.document_splits.tolist()  # doctest: +SKIP
    ([0, 3, 6, 9], [0, 1, 3])
    """

    index: int
    token_ids: np.ndarray        # int32 [tokens]
    sentence_splits: np.ndarray  # int64 [sentences + 1]
    document_splits: np.ndarray  # int64 [documents + 1]
    word_starts: Optional[np.ndarray] = None  # uint8 [tokens], with a word segmenter: 1 where a masking group starts

    @property
    def num_documents(self):
        return len(self.document_splits) - 1

    @classmethod
    def from_documents(cls, index, documents, tokenizer, counts, segmenter=None):
        """Tokenizes documents (lists of sentences) in one batch; as the original, sentences without tokens and
        then documents without sentences are dropped. `counts` (a CorpusCounts) records what was kept and dropped.
        With a `WordSegmenter`, the shard also holds where each masking group starts (`word_starts`)."""
        sentences = [sentence for document in documents for sentence in document]
        word_starts = None
        if segmenter is None:
            ids, row_splits = tokenizer.tokenize_to_ids(sentences)
        else:
            ids, row_splits, word_starts, fallbacks = segmenter.word_starts(sentences, tokenizer)
            counts.word_fallback_sentences += fallbacks
        lengths = np.diff(row_splits)
        kept_sentence = lengths > 0
        per_document = np.array([len(d) for d in documents], np.int64)
        document_of_sentence = np.repeat(np.arange(len(documents)), per_document)
        kept_per_document = np.bincount(document_of_sentence[kept_sentence], minlength=len(documents))
        kept_documents = kept_per_document[kept_per_document > 0]
        counts.sentences += int(kept_sentence.sum())
        counts.empty_sentences += int((~kept_sentence).sum())
        counts.documents += len(kept_documents)
        counts.empty_documents += int(np.sum(kept_per_document == 0))
        counts.one_sentence_documents += int(np.sum(kept_documents == 1))
        counts.tokens += len(ids)
        if segmenter is not None:
            counts.word_segmented_sentences += int(kept_sentence.sum())
        sentence_splits = np.concatenate([[0], np.cumsum(lengths[kept_sentence])]).astype(np.int64)
        document_splits = np.concatenate([[0], np.cumsum(kept_documents)]).astype(np.int64)
        return cls(index, ids, sentence_splits, document_splits, word_starts)


@dataclasses.dataclass
class ShardResult:
    """What `process_shard` sends back to the writer.

    Example:
    >>> result = process_shard(shard, InstanceOptions(), vocab)  # doctest: +SKIP
    >>> len(result.records) == result.statistics.instances  # doctest: +SKIP
    True
    """

    index: int
    records: list          # serialized tf.train.Example bytes, in output order
    statistics: InstanceStatistics


def shard_seed(random_seed, shard_index):
    """A 64-bit seed for a shard, independent between shards (numpy's SeedSequence spawning rule)."""
    return int(np.random.SeedSequence([random_seed, shard_index]).generate_state(2, np.uint64)[0])


def pair_spans(shard, options, rng):
    """All `PairSpan`s of the shard as an int64 array [N, 6] (the PairSpan fields): documents shuffled once, then
    `dupe_factor` passes over them."""
    splits = shard.document_splits.tolist()
    documents = [(splits[d], splits[d + 1]) for d in range(shard.num_documents)]
    rng.shuffle(documents)
    sentence_starts = shard.sentence_splits.tolist()
    rules = options.pair_rules
    spans = []
    for _ in range(options.dupe_factor):
        for document_index in range(len(documents)):
            spans.extend(instances_from_document(documents, document_index, sentence_starts, rules, rng))
    return np.fromiter(itertools.chain.from_iterable(spans), np.int64, count=6 * len(spans)).reshape(-1, 6)


def gather_instances(token_ids, spans, max_seq_length, vocab):
    """[CLS] A [SEP] B [SEP] for every span (rows of `pair_spans`), padded with 0 (the records' vocab has [PAD]
    first): (ids [N, T], input_mask, segment_ids, lengths [N])."""
    a_start, a_stop, b_start, b_stop = spans[:, :4].T
    ids, input_mask, segment_ids = pack_spans(token_ids, a_start, a_stop, max_seq_length, vocab.cls_id, vocab.sep_id,
                                              b_start=b_start, b_stop=b_stop)
    return ids, input_mask, segment_ids, (a_stop - a_start) + (b_stop - b_start) + 3


def process_shard(shard, options, vocab, chunk_size=8192):
    """Every instance of a shard, masked, shuffled and serialized with the feature names of `options` ->
    `ShardResult`. `vocab` is the `bert_tf.text.vocabulary.Vocabulary` the shard was tokenized with.

    Instances are gathered, masked and serialized `chunk_size` at a time, so memory holds the shard's serialized
    records and one chunk of arrays, whatever the dupe_factor.
    """
    seed = shard_seed(options.random_seed, shard.index)
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    spans = pair_spans(shard, options, rng)
    stats = InstanceStatistics(options.max_seq_length, options.max_predictions_per_seq)
    masker = StaticMasker.for_vocabulary(options.masking_rules, vocab)
    layout, names = options.row_layout, options.names
    # word_starts is written only with a segmenter: without one the records are those of the original format.
    optional = [(WORD_STARTS_FEATURE, False)] if shard.word_starts is not None else []
    encoder = ExampleEncoder([(record_name(name, names), dtype.is_floating) for name, dtype, _ in V1_FEATURES] +
                             optional)
    records, chunks = [], []
    for start in range(0, len(spans), chunk_size):
        chunk = spans[start:start + chunk_size]
        ids, input_mask, segment_ids, lengths = gather_instances(shard.token_ids, chunk, options.max_seq_length,
                                                                 vocab)
        draws = MaskDraws.draw(np_rng, ids.shape, vocab.size)
        word_starts = (None if shard.word_starts is None else
                       instance_word_starts(shard.word_starts, chunk, options.max_seq_length))
        masked_ids, positions, labels, weights, counts = masker.mask_batch(ids, lengths, draws, word_starts)
        is_random_next = chunk[:, 4]
        stats.add(lengths, masked_ids, positions, labels, counts, is_random_next, chunk[:, 5].astype(bool), vocab)
        arrays = {"input_ids": masked_ids, "input_mask": input_mask, "segment_ids": segment_ids,
                  "masked_lm_positions": positions, "masked_lm_ids": labels, "masked_lm_weights": weights,
                  "next_sentence_labels": is_random_next[:, None]}
        if word_starts is not None:
            arrays[WORD_STARTS_FEATURE] = word_starts
        if layout is None:
            records.extend(encoder.encode({record_name(name, names): value for name, value in arrays.items()}))
        else:
            chunks.append(arrays)
    # The original shuffles all instances at the end; here the shard's (the corpus is never held in memory).
    order = np_rng.permutation(len(spans))
    if layout is None:
        return ShardResult(shard.index, [records[i] for i in order], stats)
    # Packed rows hold the instances the unpacked records would (same draws, same order), then rows are shuffled.
    instances = {name: np.concatenate([c[name] for c in chunks])[order] for name in chunks[0]} if chunks else {}
    rows = pack_instances(instances, layout) if chunks else {}
    stats.rows = len(rows.get("input_ids", ()))
    row_encoder = ExampleEncoder([(record_name(name, names), is_float) for name, is_float, _ in PACKED_FEATURES] +
                                 optional)
    records = row_encoder.encode({record_name(name, names): value for name, value in rows.items()}) if rows else []
    row_order = np_rng.permutation(len(records))
    return ShardResult(shard.index, [records[i] for i in row_order], stats)
