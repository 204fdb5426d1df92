"""The two pictures, from fixed data: the demo's held-out predictions (a panel per verse, five bars of
probabilities) and bert-inspect-data's instance (each token coloured by what the masking did, four categories in
the legend, the original beside a replaced token). The Figures are read before saving; the PNGs must decode."""

import matplotlib.image
import numpy as np
import pytest

from bert_tf.demo_figure import predictions_figure, write_predictions_png
from bert_tf.instances.statistics import InstanceStatistics, plot_statistics, statistics_figure
from bert_tf.records.masking_figure import CATEGORIES
from bert_tf.text.vocabulary import Vocabulary

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

PREDICTIONS = [
    {"sentence": "Please let your handmaid speak a word to my lord the king.", "word": "king", "in_top_k": True,
     "predictions": [("lord", 0.31), ("king", 0.22), ("people", 0.08), ("earth", 0.05), ("land", 0.03)]},
    {"sentence": "Jesus wept.", "word": "wept", "in_top_k": False,
     "predictions": [("said", 0.4), ("came", 0.2), ("went", 0.1), ("answered", 0.05), ("saw", 0.01)]},
]

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "in", "the", "beginning", "god", "created", "and", "earth"]
# [CLS] in the [MASK] god created [SEP] and earth(kept) the(random; was earth) [SEP] + padding.
RECORD = {"input_ids": np.array([2, 5, 6, 4, 8, 9, 3, 10, 11, 6, 3, 0, 0]),
          "input_mask": np.array([1] * 11 + [0] * 2),
          "masked_lm_positions": np.array([3, 8, 9, 0]), "masked_lm_ids": np.array([7, 11, 11, 0]),
          "masked_lm_weights": np.array([1.0, 1.0, 1.0, 0.0]), "next_sentence_labels": np.array([0])}


def test_predictions_figure_has_a_panel_per_verse_with_its_five_bars(tmp_path):
    figure = predictions_figure(PREDICTIONS)
    assert len(figure.axes) == 2
    for panel, item in zip(figure.axes, PREDICTIONS):
        bars = panel.patches
        assert len(bars) == 5
        assert [bar.get_width() for bar in bars] == [p for _, p in item["predictions"]]
        assert [label.get_text() for label in panel.get_yticklabels()] == [t for t, _ in item["predictions"]]
        verse = panel.get_title(loc="left").split("\n")[0]
        assert "[MASK]" in verse and item["word"] not in verse
    # The masked word's bar has its own colour: "king" (second best) in the first verse, none in the second.
    first = [tuple(bar.get_facecolor()) for bar in figure.axes[0].patches]
    assert first[1] != first[0] and len(set(first)) == 2
    assert len({tuple(bar.get_facecolor()) for bar in figure.axes[1].patches}) == 1
    path = write_predictions_png(PREDICTIONS, tmp_path / "predictions.png")
    assert matplotlib.image.imread(path).shape[2] in (3, 4)


def test_inspect_figure_colours_each_token_by_what_the_masking_did(tmp_path):
    stats = InstanceStatistics(13, 4)
    stats.add(np.array([11]), RECORD["input_ids"][None], RECORD["masked_lm_positions"][None],
              RECORD["masked_lm_ids"][None], np.array([3]), RECORD["next_sentence_labels"], None,
              Vocabulary(VOCAB, "the figure's vocab"))
    figure = statistics_figure(stats, instance=RECORD, vocab=VOCAB, mask_id=4)
    instance_axes = figure.axes[3]
    legend = [text.get_text() for text in instance_axes.get_legend().get_texts()]
    assert legend == ["not predicted", "[MASK]", "random token", "kept"]
    tokens = [(text.get_text(), text.get_gid()) for text in instance_axes.texts]
    assert tokens == [("[CLS]", "not predicted"), ("in", "not predicted"), ("the", "not predicted"),
                      ("[MASK] (beginning)", "[MASK]"), ("god", "not predicted"), ("created", "not predicted"),
                      ("[SEP]", "not predicted"), ("and", "not predicted"), ("earth", "kept"),
                      ("the (earth)", "random token"), ("[SEP]", "not predicted")]
    colours = {gid: text.get_bbox_patch().get_facecolor() for text, (_, gid) in zip(instance_axes.texts, tokens)}
    assert {gid: matplotlib.colors.to_hex(colour) for gid, colour in colours.items()} == CATEGORIES
    path = tmp_path / "inspect.png"
    plot_statistics(stats, path, instance=RECORD, vocab=VOCAB, mask_id=4)
    assert matplotlib.image.imread(path).shape[2] in (3, 4)
