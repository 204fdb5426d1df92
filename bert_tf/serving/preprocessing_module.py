"""`PreprocessingModule`: text -> the encoder's three id tensors, in the graph, on tensorflow-text.

It needs tensorflow-text's ops (a TF Serving build with them, or in-process use after `import tensorflow_text`);
the encoder SavedModel does not.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text.normalization import (DELETED_CHARACTERS_RE2, MARK_CHARACTERS_RE2, MAX_CHARS_PER_WORD,
                                        SPACE_CHARACTERS_RE2)
from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary

# The original BasicTokenizer's clean-up, as regexes (bert_tf/text/normalization.py owns them). tensorflow-text's
# own lower_case option case-folds ("ß" -> "ss"), which the original does not, so lower-casing, NFD and mark
# stripping are done here as the original does them.
_CONTROL = DELETED_CHARACTERS_RE2
_SPACE = SPACE_CHARACTERS_RE2
_MARK = MARK_CHARACTERS_RE2
# The original WordpieceTokenizer maps words of more than 200 characters to [UNK]; tensorflow-text counts bytes
# (up to 4 a character), so words are checked in characters here and the byte limit only needs to be high enough.
_MAX_CHARS_PER_WORD = MAX_CHARS_PER_WORD
_MAX_BYTES_PER_WORD = 4 * _MAX_CHARS_PER_WORD


def truncate_segments(segments, budget):
    """The original `truncate_seq_pair` on ragged [batch, (tokens)] segments (one or two): while too long, drop
    the last token of the longer segment (of the second on a tie). In closed form: the first segment keeps
    min(len_a, max(ceil(budget / 2), budget - len_b)) tokens, the second the rest of the budget.

    Written with core ops rather than tensorflow-text's RoundRobinTrimmer (the same result): TF Serving's images
    embed tensorflow-text 2.12, which lacks its `TFText>RoundRobinTrim` op (tensorflow/serving#4057).
    """
    if len(segments) == 1:
        keep = [tf.minimum(segments[0].row_lengths(), tf.cast(budget, tf.int64))]
    else:
        len_a, len_b = segments[0].row_lengths(), segments[1].row_lengths()
        budget = tf.cast(budget, tf.int64)
        keep_a = tf.minimum(len_a, tf.maximum((budget + 1) // 2, budget - len_b))
        keep = [keep_a, tf.minimum(len_b, budget - keep_a)]
    return [tf.ragged.boolean_mask(segment, tf.ragged.range(segment.row_lengths()) < k[:, None])
            for segment, k in zip(segments, keep)]


class PreprocessingModule(tf.__internal__.tracking.AutoTrackable):
    """What the preprocessing SavedModel holds (written by `bert_tf.serving.export_preprocessing`).

    - `tokenize(text)`: string [batch] -> int32 RaggedTensor [batch, words, pieces] (the TF Hub API).
    - `bert_pack_inputs(segments, seq_length)`: a list of one or two tokenized batches -> `input_word_ids`,
      `input_mask`, `input_type_ids` int32 [batch, seq_length]: [CLS] A [SEP] (B [SEP]), truncated as the
      original `truncate_seq_pair` (the longer segment loses its last tokens first), padded with 0.
    - signatures `serving_default` (`text` -> the three ids) and `text_pair` (`text_a`, `text_b` -> the three
      ids), at the `seq_length` given at export.
    - the vocab as the asset `vocab.txt` (read by the lookup table when loaded, so the folder can be moved).

    Args:
        vocab_file: the WordPiece vocab (must hold [PAD] at id 0, [UNK], [CLS], [SEP], [MASK]).
        do_lower_case: lower-case and strip accents (uncased models).
        seq_length: the length the signatures pack to.
        max_seq_length: the model's max_position_embeddings; longer `seq_length` values are refused.

    Example:
    >>> module = PreprocessingModule("vocab.txt", do_lower_case=True, seq_length=128, max_seq_length=512)  # doctest: +SKIP
    >>> module.serving_default(text=tf.constant(["Hello world!"]))["input_word_ids"][0, :4].numpy()  # doctest: +SKIP
    array([ 101, 7592, 2088,  999], dtype=int32)
    """

    def __init__(self, vocab_file, do_lower_case, seq_length, max_seq_length):
        vocab = Vocabulary.from_file(vocab_file).require(SPECIAL_TOKENS, "the preprocessing model", pad_first=True)
        if not 3 <= seq_length <= max_seq_length:
            raise ValueError(f"seq_length={seq_length} must lie in [3, max_position_embeddings={max_seq_length}].")
        cls_id, sep_id = vocab.cls_id, vocab.sep_id
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")
        initializer = tf.lookup.TextFileInitializer(
            self.vocab_file, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER)
        self.vocab_table = tf.lookup.StaticVocabularyTable(initializer, num_oov_buckets=1)
        self.tokenizer = tf_text.BertTokenizer(
            self.vocab_table, token_out_type=tf.int32, unknown_token="[UNK]", lower_case=False,
            max_bytes_per_word=_MAX_BYTES_PER_WORD)
        unknown_id = vocab.unk_id

        def unknown_if_overlong(text, pieces, starts, ends):
            """[batch, words, pieces] with every word of more than MAX_CHARS_PER_WORD (200) characters made a single [UNK]."""
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
            if do_lower_case:
                text = tf_text.normalize_utf8(tf.strings.lower(text, encoding="utf-8"), "NFD")
                text = tf.strings.regex_replace(text, _MARK, "")
            return unknown_if_overlong(text, *self.tokenizer.tokenize_with_offsets(text))

        def bert_pack_inputs(segments, seq_length):
            tf.debugging.assert_less_equal(
                seq_length, max_seq_length,
                message=f"seq_length is over the max_position_embeddings={max_seq_length} of the model")
            segments = [s.merge_dims(-2, -1) if s.ragged_rank > 1 else s for s in segments]
            # Room for [CLS] and one [SEP] per segment.
            trimmed = truncate_segments(segments, seq_length - (len(segments) + 1))
            ids, type_ids = tf_text.combine_segments(trimmed, cls_id, sep_id)
            word_ids, mask = tf_text.pad_model_inputs(ids, seq_length)
            type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length)
            return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}

        text_spec = tf.TensorSpec([None], tf.string)
        self.tokenize = tf.function(tokenize, input_signature=[text_spec])
        self.bert_pack_inputs = tf.function(bert_pack_inputs)
        tokens_spec = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)
        length_spec = tf.TensorSpec([], tf.int32)
        for count in (1, 2):
            self.bert_pack_inputs.get_concrete_function([tokens_spec] * count, length_spec)

        def serving_default(text):
            return bert_pack_inputs([self.tokenize(text)], seq_length)

        def text_pair(text_a, text_b):
            return bert_pack_inputs([self.tokenize(text_a), self.tokenize(text_b)], seq_length)

        self.serving_default = tf.function(serving_default, input_signature=[text_spec])
        self.text_pair = tf.function(text_pair, input_signature=[text_spec, text_spec])

    def signature_functions(self):
        """The functions to save as signatures: `serving_default` (one segment) and `text_pair`."""
        return {"serving_default": self.serving_default, "text_pair": self.text_pair}
