"""One instance drawn as the pre-training explainers draw it: its tokens in order, each predicted position coloured by
what the masking did to it ([MASK], a random token, or kept) with the original token beside it."""

import numpy as np

# What the masking did to a position, in legend order, with its colour.
CATEGORIES = {"not predicted": "#eeeeee", "[MASK]": "#f4a259", "random token": "#e15759", "kept": "#59a14f"}
_TOKENS_PER_LINE = 12


def masking_categories(record, mask_id):
    """(token ids the model sees, {position: (category, original id)}) of one record of the original format.

    Example:
    >>> record = {"input_ids": np.array([101, 103, 7, 102, 0]), "input_mask": np.array([1, 1, 1, 1, 0]),
    ...           "masked_lm_positions": np.array([1, 2, 0]), "masked_lm_ids": np.array([5, 7, 0]),
    ...           "masked_lm_weights": np.array([1.0, 1.0, 0.0])}
    >>> masking_categories(record, mask_id=103)[1]
    {1: ('[MASK]', 5), 2: ('kept', 7)}
    """
    length = int(np.sum(record["input_mask"]))
    seen = [int(i) for i in record["input_ids"][:length]]
    predicted = {}
    for position, original, weight in zip(record["masked_lm_positions"], record["masked_lm_ids"],
                                          record["masked_lm_weights"]):
        if weight <= 0:
            continue
        position, original = int(position), int(original)
        if seen[position] == mask_id:
            category = "[MASK]"
        elif seen[position] == original:
            category = "kept"
        else:
            category = "random token"
        predicted[position] = (category, original)
    return seen, predicted


def draw_instance_masking(axes, record, vocab, mask_id):
    """Draws `record`'s tokens on `axes`, a line of boxes after another, each predicted one coloured by its category
    and followed by "(original)" when the model sees another token; the legend names the four categories.

    Example:
    >>> figure, axes = matplotlib.pyplot.subplots()  # doctest: +SKIP
    >>> draw_instance_masking(axes, record, vocabulary.tokens, vocabulary.mask_id)  # doctest: +SKIP
    """
    from matplotlib.patches import Patch

    seen, predicted = masking_categories(record, mask_id)
    lines = max(1, -(-len(seen) // _TOKENS_PER_LINE))
    for position, token_id in enumerate(seen):
        category, original = predicted.get(position, ("not predicted", None))
        text = vocab[token_id]
        if category in ("[MASK]", "random token"):
            text += f" ({vocab[original]})"
        row, column = divmod(position, _TOKENS_PER_LINE)
        axes.text(column + 0.5, lines - row - 0.5, text, ha="center", va="center", fontsize=8, gid=category,
                  bbox={"boxstyle": "round,pad=0.3", "facecolor": CATEGORIES[category], "edgecolor": "#888888"})
    axes.set(xlim=(0, _TOKENS_PER_LINE), ylim=(0, lines))
    axes.axis("off")
    label = int(record["next_sentence_labels"][0]) if "next_sentence_labels" in record else None
    axes.set_title("one instance as the model sees it" + (
        "" if label is None else f" ({'random next' if label else 'actual next'} sentence)")
        + "; (original) beside a replaced token", fontsize=10)
    axes.legend(handles=[Patch(facecolor=color, edgecolor="#888888", label=name) for name, color in CATEGORIES.items()],
                loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(CATEGORIES), fontsize=8, frameon=False)
