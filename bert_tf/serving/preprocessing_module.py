"""`PreprocessingModule`: text -> the encoder's three id tensors, in the graph, on tensorflow-text, with the API
of TF Hub's `bert_en_uncased_preprocess/3` (a callable root, `tokenize` and `bert_pack_inputs` subobjects).

It needs tensorflow-text's ops (a TF Serving build with them, or in-process use after `import tensorflow_text`);
the encoder SavedModel does not.
"""

import itertools

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.serving.input_checks import check_seq_length
from bert_tf.serving.serving_module import ServingModule, graph_function
from bert_tf.serving.settings_variables import settings_variables
from bert_tf.text.normalization import (
    DELETED_CHARACTERS_RE2,
    MARK_CHARACTERS_RE2,
    MAX_CHARS_PER_WORD,
    SPACE_CHARACTERS_RE2,
)
from bert_tf.text.packing import pack_spans_in_graph, pair_keep_lengths
from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary

# The original BasicTokenizer's clean-up, as regexes (bert_tf/text/normalization.py owns them). tensorflow-text's
# own lower_case option case-folds ("ß" -> "ss"), which the original does not, and always strips the marks, so
# lower-casing, NFD and mark stripping are done here as the original does them, each as its setting says.
_CONTROL = DELETED_CHARACTERS_RE2
_SPACE = SPACE_CHARACTERS_RE2
_MARK = MARK_CHARACTERS_RE2
# The original WordpieceTokenizer maps words of more than 200 characters to [UNK]; tensorflow-text counts bytes
# (up to 4 a character), so words are checked in characters here and the byte limit only needs to be high enough.
_MAX_CHARS_PER_WORD = MAX_CHARS_PER_WORD
_MAX_BYTES_PER_WORD = 4 * _MAX_CHARS_PER_WORD
# TF Hub's preprocessing models pack to 128 tokens when no seq_length is given.
DEFAULT_SEQ_LENGTH = 128


class Tokenize(tf.Module):
    """The `tokenize` subobject: string [batch] -> int32 RaggedTensor [batch, words, pieces], the original
    `FullTokenizer`'s ids; it owns the vocab table, so a Keras model built on it can be saved.

    `get_special_tokens_dict()`: int32 scalars `vocab_size`, `start_of_sequence_id` ([CLS]),
    `end_of_segment_id` ([SEP]), `padding_id` ([PAD]), `mask_id` ([MASK]), as TF Hub's preprocessors give them.

    Args:
        vocab_asset: the vocab file as a `tf.saved_model.Asset`.
        vocab: its `Vocabulary`.
        settings: the vocab's `TokenizerSettings` (lower-casing, accent stripping).

    Example:
    >>> tokenize = Tokenize(tf.saved_model.Asset("vocab.txt"), Vocabulary.from_file("vocab.txt"),
    ...                     TokenizerSettings.for_vocab("vocab.txt"))  # doctest: +SKIP
    >>> tokenize(tf.constant(["Hello world!"])).to_list()  # doctest: +SKIP
    [[[7592], [2088], [999]]]
    """

    def __init__(self, vocab_asset, vocab, settings):
        super().__init__(name="tokenize")
        initializer = tf.lookup.TextFileInitializer(
            vocab_asset, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER)
        self.vocab_table = tf.lookup.StaticVocabularyTable(initializer, num_oov_buckets=1)
        self.tokenizer = tf_text.BertTokenizer(
            self.vocab_table, token_out_type=tf.int32, unknown_token="[UNK]", lower_case=False,
            max_bytes_per_word=_MAX_BYTES_PER_WORD)
        unknown_id = vocab.unk_id
        special_ids = {"vocab_size": vocab.size, "start_of_sequence_id": vocab.cls_id,
                       "end_of_segment_id": vocab.sep_id, "padding_id": vocab.pad_id, "mask_id": vocab.mask_id}

        def unknown_if_overlong(text, pieces, starts, ends):
            """[batch, words, pieces] with every word of more than MAX_CHARS_PER_WORD characters made one [UNK]."""
            word_pieces = pieces.values  # [words, (pieces)]
            word_start = tf.reduce_min(starts, axis=-1).flat_values
            word_end = tf.reduce_max(ends, axis=-1).flat_values
            # pieces.value_rowids(): the text (batch row) each word comes from; offsets are bytes of that text.
            word_text = tf.strings.substr(tf.gather(text, pieces.value_rowids()), word_start, word_end - word_start)
            overlong = tf.strings.length(word_text, unit="UTF8_CHAR") > _MAX_CHARS_PER_WORD
            piece_overlong = tf.gather(overlong, word_pieces.value_rowids())
            first_piece = tf.ragged.range(word_pieces.row_lengths()).flat_values == 0
            values = tf.where(piece_overlong, unknown_id, word_pieces.flat_values)
            kept = word_pieces.with_flat_values(tf.logical_or(first_piece, tf.logical_not(piece_overlong)))
            return pieces.with_values(tf.ragged.boolean_mask(word_pieces.with_flat_values(values), kept))

        def tokenize(text):
            text = tf.strings.regex_replace(text, _CONTROL, "")
            text = tf.strings.regex_replace(text, _SPACE, " ")
            if settings.do_lower_case:
                text = tf.strings.lower(text, encoding="utf-8")
            if settings.strip_accents:
                text = tf.strings.regex_replace(tf_text.normalize_utf8(text, "NFD"), _MARK, "")
            return unknown_if_overlong(text, *self.tokenizer.tokenize_with_offsets(text))

        self.__call__ = graph_function(tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        self.get_special_tokens_dict = graph_function(
            lambda: {name: tf.constant(value, tf.int32) for name, value in special_ids.items()}, input_signature=[])


class BertPackInputs(tf.Module):
    """The `bert_pack_inputs` subobject: a list of one or two tokenized batches (int32 RaggedTensors of rank 2,
    [batch, tokens], or rank 3, [batch, words, pieces], as `tokenize` gives) and an optional `seq_length`
    (default 128) -> `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length]:
    [CLS] A [SEP] (B [SEP]), truncated as the original `truncate_seq_pair` (the longer segment loses its last
    tokens first), padded with 0: the rules of `bert_tf.text.packing`, on core TensorFlow ops.

    Args:
        cls_id, sep_id: the ids of [CLS] and [SEP].
        max_seq_length: the model's max_position_embeddings; a longer `seq_length` fails naming it.

    Example:
    >>> pack = BertPackInputs(cls_id=101, sep_id=102, max_seq_length=512)
    >>> pack.__call__([tf.ragged.constant([[7592, 2088]])], seq_length=6)["input_word_ids"].numpy().tolist()
    [[101, 7592, 2088, 102, 0, 0]]
    """

    def __init__(self, cls_id, sep_id, max_seq_length):
        super().__init__(name="bert_pack_inputs")

        def bert_pack_inputs(segments, seq_length=DEFAULT_SEQ_LENGTH):
            if len(segments) > 2:
                return too_many_segments(segments, seq_length)
            tf.debugging.assert_less_equal(
                seq_length, max_seq_length,
                message=f"seq_length is over the max_position_embeddings={max_seq_length} of the model")
            segments = [s.merge_dims(-2, -1) if s.ragged_rank > 1 else s for s in segments]
            # Room for [CLS] and one [SEP] per segment; each segment keeps its first tokens.
            budget = seq_length - (len(segments) + 1)
            splits = [tf.cast(s.row_splits, tf.int32) for s in segments]
            lengths = [row_splits[1:] - row_splits[:-1] for row_splits in splits]
            tokens = tf.concat([tf.cast(s.flat_values, tf.int32) for s in segments], 0)
            if len(segments) == 1:
                ids, mask, type_ids = pack_spans_in_graph(
                    tokens, splits[0][:-1], splits[0][:-1] + tf.minimum(lengths[0], budget), seq_length, cls_id,
                    sep_id)
            else:
                keep_a, keep_b = pair_keep_lengths(lengths[0], lengths[1], budget)
                b_start = splits[1][:-1] + splits[0][-1]  # B's tokens follow all of A's in `tokens`
                ids, mask, type_ids = pack_spans_in_graph(
                    tokens, splits[0][:-1], splits[0][:-1] + keep_a, seq_length, cls_id, sep_id, b_start=b_start,
                    b_stop=b_start + keep_b)
            return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": type_ids}

        def too_many_segments(segments, seq_length):
            """Fails when run, naming the limit: without a trace for three segments the loader would answer
            "Could not find matching concrete function"."""
            failed = tf.debugging.Assert(tf.constant(False), [
                f"bert_pack_inputs takes one or two segments (text, or text_a and text_b), as the TF Hub BERT "
                f"preprocessors do; got {len(segments)}: join the extra texts into one of the two"])
            with tf.control_dependencies([failed]):
                empty = tf.zeros(tf.stack([segments[0].nrows(out_type=tf.int32), seq_length]), tf.int32)
            return {"input_word_ids": empty, "input_mask": empty, "input_type_ids": empty}

        self.__call__ = graph_function(bert_pack_inputs)
        # Restored functions run only the traces saved with them: one per number of segments and rank of each
        # (a Python seq_length is converted to the int32 scalar these take); three segments fail by name.
        by_rank = {2: tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1),
                   3: tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)}
        length_spec = tf.TensorSpec([], tf.int32)
        for count in (1, 2, 3):
            for ranks in itertools.product((2, 3), repeat=count):
                self.__call__.get_concrete_function([by_rank[r] for r in ranks], length_spec)


class PreprocessingModule(ServingModule):
    """What the preprocessing SavedModel holds (written by `bert_tf.serving.export_preprocessing`), the API of
    TF Hub's BERT preprocessing models:

    - `__call__(text)` (also `serve`, for `keras.layers.TFSMLayer`): string [batch] -> the three ids at the
      `seq_length` given at export, so `hub.KerasLayer(path)` works without `signature=`.
    - `tokenize` (see `Tokenize`) and `bert_pack_inputs` (see `BertPackInputs`): tracked, callable subobjects.
    - signatures `serving_default` (`text` -> the three ids) and `text_pair` (`text_a`, `text_b` -> the three
      ids), at the `seq_length` given at export.
    - the vocab as the asset `vocab.txt` (read by the lookup table when loaded, so the folder can be moved).
    - bool variables `do_lower_case` (lower-casing, as TF Hub's models have it) and `strip_accents`.

    Args:
        vocab_file: the WordPiece vocab (must hold [PAD] at id 0, [UNK], [CLS], [SEP], [MASK]).
        settings: its `TokenizerSettings` (lower-casing, accent stripping).
        seq_length: the length the root and the signatures pack to.
        max_seq_length: the model's max_position_embeddings; longer `seq_length` values are refused.

    Example:
    >>> module = PreprocessingModule("vocab.txt", TokenizerSettings.for_vocab("vocab.txt"), seq_length=128,
    ...                              max_seq_length=512)  # doctest: +SKIP
    >>> module.serving_default(text=tf.constant(["Hello world!"]))["input_word_ids"][0, :4].numpy()  # doctest: +SKIP
    array([ 101, 7592, 2088,  999], dtype=int32)
    """

    def __init__(self, vocab_file, settings, seq_length, max_seq_length):
        super().__init__()
        vocab = Vocabulary.from_file(vocab_file).require(SPECIAL_TOKENS, "the preprocessing model", pad_first=True)
        check_seq_length(seq_length, max_seq_length)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case, self.strip_accents = settings_variables(settings)
        self.tokenize = Tokenize(self.vocab_file, vocab, settings)
        self.bert_pack_inputs = BertPackInputs(vocab.cls_id, vocab.sep_id, max_seq_length)
        text_spec = tf.TensorSpec([None], tf.string)

        def text(text):
            return self.bert_pack_inputs.__call__([self.tokenize.__call__(text)], seq_length)

        def text_pair(text_a, text_b):
            segments = [self.tokenize.__call__(text_a), self.tokenize.__call__(text_b)]
            return self.bert_pack_inputs.__call__(segments, seq_length)

        self.__call__ = self.serve = self.serving_default = graph_function(text, input_signature=[text_spec])
        self.text_pair = graph_function(text_pair, input_signature=[text_spec, text_spec])

    def signature_functions(self):
        """`serving_default` (one segment) and `text_pair`."""
        return {"serving_default": self.serving_default, "text_pair": self.text_pair}

