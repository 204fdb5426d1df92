"""An optional word segmenter that groups characters into words for whole-word masking only (Chinese).

The tokenizer puts every CJK ideograph in a word of its own, so the original whole-word masking ("##" pieces join
the piece before them) masks Chinese character by character. The recipe the Chinese BERTs converged on
(ymcui/Chinese-BERT-wwm; Hugging Face's former `run_chinese_ref.py`) segments each line into words with a word
segmenter and masks the characters of a word together; the ids stay the characters' ids, so fine-tuning and serving
need no segmenter. `bert-create-pretraining-data --word_segmenter=jieba --do_whole_word_mask` does that here.

How a line's words become masking groups (`WordSegmenter.word_starts`): each segmenter word is tokenized on its own;
when the words' tokens, one after the other, are exactly the line's tokens, each word's tokens form one group (an
ideograph is exactly one token, so a Chinese word of n characters is a group of n tokens; "##" pieces stay inside
their word). When they are not (the segmenter cut inside a word of the tokenizer, e.g. "Caf" | "é" where the
tokenizer sees "cafe"), the line falls back to the original rule (a group starts at every token that is not a "##"
piece), and is counted.

The segmenters are optional installs (setup.py's `chinese` extra): asking for one that is not installed is an
`InputError` naming the extra.
"""

import importlib
import logging
import warnings

import numpy as np

from bert_tf.errors import InputError

# Segmenter name -> (the module it needs, the setup.py extra that installs it).
WORD_SEGMENTERS = {"jieba": ("jieba", "chinese")}


class WordSegmenter:
    """Words of a line for whole-word masking, and where each masking group starts among the line's tokens.

    Args:
        name: a key of `WORD_SEGMENTERS` ("jieba": jieba's default dictionary and HMM, deterministic).

    Example:
    >>> segmenter = WordSegmenter("jieba")
    >>> segmenter.words("我爱北京天安门。")
    ['我', '爱', '北京', '天安门', '。']
    """

    def __init__(self, name):
        if name not in WORD_SEGMENTERS:
            raise InputError(f"word_segmenter={name!r} is unknown: use one of {sorted(WORD_SEGMENTERS)}.")
        module, extra = WORD_SEGMENTERS[name]
        try:
            with warnings.catch_warnings():  # jieba 0.42 imports setuptools' deprecated pkg_resources where it can
                warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)
                jieba = importlib.import_module(module)
        except ImportError:
            raise InputError(f"word_segmenter={name!r} needs the optional package {module}: install it with "
                             f"pip install 'bert_tf[{extra}]' (the {extra} extra), or leave --word_segmenter "
                             f"out.") from None
        self.name = name
        # jieba logs its dictionary loading on stderr at DEBUG; a private Tokenizer keeps its state ours alone.
        jieba.setLogLevel(logging.WARNING)
        self._tokenizer = jieba.Tokenizer()

    def __getstate__(self):
        # Beam and multiprocessing pickle the segmenter; the dictionary is loaded again where it is used.
        return {"name": self.name}

    def __setstate__(self, state):
        self.__init__(state["name"])

    def words(self, text):
        """The segmenter's words of `text`, in order; joined they give `text` back (spaces are words too)."""
        return list(self._tokenizer.cut(text, HMM=True))

    def word_starts(self, sentences, tokenizer):
        """Tokenizes `sentences` with `tokenizer` (a `FullTokenizer`) and marks where each masking group starts.

        Returns (ids int32 [total], row_splits int64 [len(sentences) + 1], starts uint8 [total], fallbacks): ids
        and row_splits as `tokenizer.tokenize_to_ids(sentences)`; starts 1 on the first token of each group, 0 on
        the others; fallbacks the number of sentences masked by the original "##" rule because the segmenter's
        words did not tokenize to the sentence's tokens.
        """
        ids, row_splits = tokenizer.tokenize_to_ids(sentences)
        words = [self.words(sentence) for sentence in sentences]
        word_ids, word_splits = _tokenize_words([word for line in words for word in line], tokenizer)
        # A group starts at each word's first token: at the token offsets where a word with tokens begins.
        word_lengths = np.diff(word_splits)
        first_word = np.concatenate([[0], np.cumsum([len(line) for line in words])]).astype(np.int64)
        starts = np.zeros(len(ids), np.uint8)
        by_pieces = (~tokenizer.vocabulary.is_subword[ids]).astype(np.uint8)
        fallbacks = 0
        for s in range(len(sentences)):
            line = slice(row_splits[s], row_splits[s + 1])
            first, stop = word_splits[first_word[s]], word_splits[first_word[s + 1]]
            if np.array_equal(word_ids[first:stop], ids[line]):
                lengths = word_lengths[first_word[s]:first_word[s + 1]]
                offsets = np.cumsum(lengths) - lengths
                line_starts = np.zeros(row_splits[s + 1] - row_splits[s], np.uint8)
                line_starts[offsets[lengths > 0]] = 1
                starts[line] = line_starts
            else:
                fallbacks += 1
                starts[line] = by_pieces[line]
        return ids, row_splits, starts, fallbacks


def _tokenize_words(words, tokenizer):
    """`tokenizer.tokenize_to_ids(words)`, each distinct word tokenized once (a text repeats most of its words)."""
    index_of = {}
    index = np.array([index_of.setdefault(word, len(index_of)) for word in words], np.int64)
    distinct_ids, distinct_splits = tokenizer.tokenize_to_ids(list(index_of))
    lengths = np.diff(distinct_splits)[index]
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # Token t of word w is distinct token distinct_splits[index[w]] + (t - splits[w]).
    source = np.repeat(distinct_splits[:-1][index] - splits[:-1], lengths) + np.arange(splits[-1])
    return distinct_ids[source], splits
