"""The demo's held-out predictions as one picture: each verse with its word masked, and the model's top-5 words as
bars of their probabilities (the masked word in another colour)."""

import textwrap

PREDICTIONS_FILE = "masked_word_predictions.png"
_WORD, _OTHER = "#59a14f", "#4e79a7"


def predictions_figure(predictions):
    """A matplotlib Figure with one panel per verse: its text with [MASK] in the word's place as the title, and a
    horizontal bar per predicted word (best first) whose length is its probability.

    Args:
        predictions: what `bert_tf.demo.masked_word_predictions` returns: dicts with `sentence`, `word`,
            `predictions` ([(token, probability)] best first) and `in_top_k`.

    Example:
    >>> figure = predictions_figure([{"sentence": "Jesus wept.", "word": "wept", "in_top_k": True,
    ...                               "predictions": [("wept", 0.6), ("said", 0.2), ("came", 0.1)]}])
    >>> [float(bar.get_width()) for bar in figure.axes[0].patches]
    [0.6, 0.2, 0.1]
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(predictions), 1, figsize=(9, 2.3 * len(predictions)), squeeze=False)
    for panel, item in zip(axes[:, 0], predictions):
        tokens = [token for token, _ in item["predictions"]]
        probabilities = [probability for _, probability in item["predictions"]]
        rows = range(len(tokens))[::-1]  # the best word on top
        colors = [_WORD if token == item["word"].lower() else _OTHER for token in tokens]
        bars = panel.barh(rows, probabilities, color=colors)
        panel.bar_label(bars, fmt="%.2f", fontsize=8, padding=2)
        panel.set_yticks(list(rows), tokens)
        panel.set_xlim(0, 1)
        masked = "[MASK]".join(item["sentence"].rsplit(item["word"], 1))
        found = "in the top 5" if item["in_top_k"] else "not in the top 5"
        panel.set_title(textwrap.fill(masked, 100) + f"\n(masked: {item['word']!r}, {found})", fontsize=9,
                        loc="left")
    axes[-1, 0].set_xlabel("probability the model gives the word at [MASK]")
    figure.suptitle("Masked-word predictions on held-out verses, through the exported SavedModels", fontsize=11)
    figure.tight_layout()
    return figure


def write_predictions_png(predictions, path):
    """Writes `predictions_figure(predictions)` as a PNG at `path`; returns the path."""
    import matplotlib.pyplot as plt

    figure = predictions_figure(predictions)
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path
