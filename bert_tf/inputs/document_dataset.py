"""Training batches straight from documents: instances built and masked inside tf.data, new ones each epoch.

The RoBERTa-style path that skips create_pretraining_data: documents (from `text_documents` or any dataset of
tokenized documents) -> unmasked instances (`document_instances`) -> shuffled batches -> `DynamicMasker`.
Everything is a TensorFlow op with stateless seeds, so a plain iterator can be checkpointed and resumed.
"""

import random

import tensorflow as tf
from absl import logging

from bert_tf.inputs.document_instances import full_sentence_instances, next_sentence_instances
from bert_tf.instances.sentence_pairs import SentencePairRules
from bert_tf.text.file_patterns import expand_file_patterns

DEFAULT_WINDOW = 128
DEFAULT_DOCUMENT_BUFFER = 1000
DEFAULT_SHUFFLE_BUFFER = 1000


def text_documents(input_patterns):
    """Documents of the original input format: one sentence per line, a blank line between documents.

    Yields one document per element, a string tensor [sentences] (stripped, blank lines dropped, undecodable
    bytes removed). Each file is read whole, so shard a corpus into files of at most a few hundred MB.

    Example:
    >>> docs = text_documents("corpus/*.txt")  # doctest: +SKIP
    >>> next(iter(docs)).numpy()[:2]  # doctest: +SKIP
    array([b'In the beginning, God created the heavens and the earth.', b'The earth was formless and empty.'])
    """
    files = expand_file_patterns(input_patterns)

    def file_documents(path):
        lines = tf.strings.split(tf.io.read_file(path), "\n")
        # Undecodable bytes are dropped, as the original's convert_to_unicode(errors="ignore") does.
        lines = tf.strings.strip(tf.strings.unicode_transcode(lines, "UTF-8", "UTF-8", errors="ignore"))
        blank = tf.equal(lines, "")
        document = tf.cumsum(tf.cast(blank, tf.int64))
        sentences = tf.RaggedTensor.from_value_rowids(tf.boolean_mask(lines, ~blank),
                                                      tf.boolean_mask(document, ~blank),
                                                      nrows=document[-1] + 1)
        return tf.data.Dataset.from_tensor_slices(sentences)

    documents = tf.data.Dataset.from_tensor_slices(files).flat_map(file_documents)
    return documents.filter(lambda sentences: tf.size(sentences) > 0)


def document_pretraining_dataset(documents, masker, max_seq_length, max_predictions_per_seq, batch_size, *,
                                 next_sentence=True, short_seq_prob=SentencePairRules.short_seq_prob, tokenize=None,
                                 is_training=True, input_context=None, window=DEFAULT_WINDOW,
                                 document_buffer=DEFAULT_DOCUMENT_BUFFER, shuffle_buffer=DEFAULT_SHUFFLE_BUFFER,
                                 seed=None, num_parallel_calls=tf.data.AUTOTUNE):
    """Batches with the feature dict of `pretraining_dataset`, built from documents and masked on the fly.

    Args:
        documents: a `tf.data.Dataset` of documents: int token ids, ragged [sentences, (tokens)] (no [CLS]/[SEP]),
            or sentence strings [sentences] (with `tokenize`), e.g. from `text_documents`.
        masker: a `DynamicMasker` (its vocab gives [CLS]/[SEP] and the masking rules).
        max_seq_length, max_predictions_per_seq: the shapes of the batches.
        batch_size: the batch this pipeline yields (see `pretraining_dataset`).
        next_sentence: True builds the original NSP pairs; False packs full sentences (RoBERTa FULL-SENTENCES)
            with next_sentence_labels 0 (train without the NSP loss then).
        short_seq_prob: the original's share of documents given a shorter random target length (NSP only).
        tokenize: a function from a string tensor [N] to int ids ragged [N, (tokens)] (e.g. a tensorflow-text
            tokenizer's `tokenize` with merged word pieces) for string documents.
        is_training: shuffle and repeat forever, with new instances and masks each epoch; else one pass.
        input_context: a `tf.distribute.InputContext`: each pipeline keeps every n-th document.
        window: documents per window; a random next segment comes from another document of its window.
        document_buffer: documents in the shuffle buffer before windowing (is_training).
        shuffle_buffer: instances in the shuffle buffer before batching (is_training).
        seed: makes documents, instances and masks reproducible; None draws one.

    Example:
    >>> masker = DynamicMasker("vocab.txt")  # doctest: +SKIP
    >>> tokenizer = tf_text.FastBertTokenizer(vocab, token_out_type=tf.int32,
    ...                                       lower_case_nfd_strip_accents=True)  # doctest: +SKIP
    >>> ds = document_pretraining_dataset(text_documents("corpus/*.txt"), masker, 128, 20, 32,  # doctest: +SKIP
    ...                                   tokenize=tokenizer.tokenize, seed=1)
    >>> next(iter(ds))["masked_lm_positions"].shape  # doctest: +SKIP
    TensorShape([32, 20])
    """
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 31)
        logging.info("document_pretraining_dataset: no seed given, drew seed=%d.", seed)
    for arg, value in (("max_seq_length", max_seq_length), ("max_predictions_per_seq", max_predictions_per_seq),
                       ("batch_size", batch_size), ("window", window)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{arg}={value!r} must be a positive integer.")
    if next_sentence:
        pair_rules = SentencePairRules(max_seq_length, short_seq_prob)  # checks max_seq_length and short_seq_prob
    elif max_seq_length < 3:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for tokens between [CLS] and [SEP].")
    is_text = documents.element_spec.dtype == tf.string
    if is_text and tokenize is None:
        raise ValueError("The documents are strings: pass tokenize= (a string [N] -> ids [N, (tokens)] function).")

    pipeline_id = input_context.input_pipeline_id if input_context else 0
    if input_context and input_context.num_input_pipelines > 1:
        documents = documents.shard(input_context.num_input_pipelines, pipeline_id)
    # Two seed streams per pipeline that never meet: one for the windows' instances, one for the masks.
    window_seed = tf.constant((seed * 1_000_003 + 2 * pipeline_id) % 2 ** 31, tf.int64)
    mask_seed = (seed * 1_000_003 + 2 * pipeline_id + 1) % 2 ** 31

    def clean(document):
        ids = tf.cast(tokenize(document) if is_text else document, tf.int32)
        if isinstance(ids, tf.RaggedTensor) and ids.ragged_rank > 1:
            ids = ids.merge_dims(1, -1)  # word pieces of each word, flattened into the sentence
        # As in the original, sentences without tokens are dropped.
        return tf.ragged.boolean_mask(ids, ids.row_lengths() > 0)

    documents = documents.map(clean, num_parallel_calls=num_parallel_calls, deterministic=True)
    documents = documents.filter(lambda document: document.nrows() > 0)
    if is_training:
        documents = documents.shuffle(document_buffer, seed=seed).repeat()
    windows = documents.ragged_batch(window)

    cls_id, sep_id = masker.cls_id, masker.sep_id

    def build(index, window_documents):
        if next_sentence:
            return next_sentence_instances(window_documents, pair_rules, cls_id, sep_id, tf.stack([window_seed, index]))
        return full_sentence_instances(window_documents, max_seq_length, cls_id, sep_id)

    instances = windows.enumerate().map(build, num_parallel_calls=num_parallel_calls, deterministic=True)
    instances = instances.unbatch()
    if is_training:
        instances = instances.shuffle(shuffle_buffer, seed=seed)
    batches = instances.batch(batch_size, drop_remainder=True)
    batches = masker.mask_batches(batches, max_predictions_per_seq, mask_seed, num_parallel_calls)
    return batches.prefetch(tf.data.AUTOTUNE)
