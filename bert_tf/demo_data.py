"""The demo's data: the embedded Bible split into training and held-out chapters, a WordPiece vocab learned from
the training chapters, and pre-training records at any lengths, each made once by the commands a user types.

The demo (`bert_tf/demo.py`), the time-to-quality benchmark and the convergence experiments all read their data
from a `DemoData`, so the three agree on the split, the vocab and the records, and reuse one another's files when
they share a directory. Every file is written completely or not at all (the split here, the rest by the
commands), so an interrupted run never leaves one that looks done.
"""

import os
import subprocess
import sys

from bert_tf.text.bible import write_bible_split

HELD_OUT_EVERY = 10  # chapters: Genesis 1, 11, 21, ... are held out
VOCAB_SIZE = 8000  # bert-vocab's target; the Bible yields ~4,300 tokens
MASKED_LM_PROB = 0.15
DUPE_FACTOR = 5  # static maskings of the training chapters (the held-out chapters are masked once)
RANDOM_SEED = 12345


class DemoData:
    """Text, vocab and records under `data_dir`, made on first use and reused after.

    Args:
        data_dir: where the files go.
        vocab_size: `bert-vocab`'s target (the Bible yields ~4,300 tokens for 8,000); None uses `vocab_file`.
        vocab_file: a WordPiece vocab to use instead of learning one.
        dupe_factor, random_seed: `bert-create-pretraining-data`'s, for the training chapters.
        num_workers: processes that build instances (None: the command's default, the CPU count).
        quiet: run the commands silently (their stderr is shown when one fails); else print each command as a
            user would type it, with its output.

    Example:
    >>> data = DemoData("demo_output/data")  # doctest: +SKIP
    >>> data.records("train", 32, 5)  # doctest: +SKIP
    'demo_output/data/train_seq32_pred5.tfrecord'
    """

    def __init__(self, data_dir, vocab_size=VOCAB_SIZE, vocab_file=None, dupe_factor=DUPE_FACTOR,
                 random_seed=RANDOM_SEED, num_workers=None, quiet=False):
        self.data_dir = os.path.abspath(data_dir)
        self.vocab_size = vocab_size
        self._vocab_file = vocab_file
        self.dupe_factor = dupe_factor
        self.random_seed = random_seed
        self.num_workers = num_workers
        self.quiet = quiet
        self.chapters = None  # {"train": n, "heldout": n} when this object wrote the split

    def texts(self):
        """{"train": path, "heldout": path}: the chapters in the original input format."""
        files = {name: os.path.join(self.data_dir, f"{name}.txt") for name in ("train", "heldout")}
        if all(os.path.exists(path) for path in files.values()):
            self._say(f"Text found in {self.data_dir}: reusing it.")
            return files
        files, self.chapters = write_bible_split(self.data_dir, HELD_OUT_EVERY)
        self._say(f"World English Bible: {self.chapters['train']} training chapters, {self.chapters['heldout']} "
                  f"held-out chapters (every {HELD_OUT_EVERY}th) in {self.data_dir}.")
        return files

    def vocab(self):
        """The vocab file: the one given, or one learned from the training chapters by `bert-vocab`."""
        if self._vocab_file:
            return self._vocab_file
        path = os.path.join(self.data_dir, f"vocab{self.vocab_size}.txt")
        if os.path.exists(path):
            self._say(f"Vocab found: {path}: reusing it.")
        else:
            self.command("vocab", f"--input_file={self.texts()['train']}", f"--vocab_size={self.vocab_size}",
                         f"--output_file={path}")
        self._vocab_file = path
        return path

    def records(self, name, max_seq_length, max_predictions_per_seq, masked_lm_prob=MASKED_LM_PROB):
        """Records of the "train" or "heldout" chapters at these lengths, by `bert-create-pretraining-data`."""
        dupe_factor = self.dupe_factor if name == "train" else 1
        suffix = "" if masked_lm_prob == MASKED_LM_PROB else f"_mask{round(masked_lm_prob * 100)}"
        if name == "train" and dupe_factor != DUPE_FACTOR:
            suffix += f"_dupe{dupe_factor}"
        path = os.path.join(self.data_dir, f"{name}_seq{max_seq_length}_pred{max_predictions_per_seq}{suffix}.tfrecord")
        if os.path.exists(path):
            self._say(f"Records found: {path}: reusing them.")
            return path
        workers = [] if self.num_workers is None else [f"--num_workers={self.num_workers}"]
        self.command("create_pretraining_data", f"--input_file={self.texts()[name]}", f"--output_file={path}",
                     f"--vocab_file={self.vocab()}", f"--max_seq_length={max_seq_length}",
                     f"--max_predictions_per_seq={max_predictions_per_seq}", f"--masked_lm_prob={masked_lm_prob}",
                     f"--dupe_factor={dupe_factor}", f"--random_seed={self.random_seed}", *workers,
                     *(["--noprogress"] if self.quiet else []))
        return path

    def recipe_records(self, recipe):
        """({phase name: training records at its lengths}, held-out records at the last phase's lengths). The records
        hold the original 15% masks; a recipe that draws its own masks at another rate (`dynamic_masking`) has its
        prediction slots scaled to 15% for them (demo_cpu: 10 slots at 30%, records with 5)."""
        def slots(phase):
            if not recipe.dynamic_masking.enabled:
                return phase.max_predictions_per_seq
            return round(phase.max_predictions_per_seq * MASKED_LM_PROB / recipe.dynamic_masking.masked_lm_prob)

        last = recipe.phases[-1]
        heldout = self.records("heldout", last.max_seq_length, slots(last))
        train = {phase.name: self.records("train", phase.max_seq_length, slots(phase)) for phase in recipe.phases}
        return train, heldout

    def command(self, module, *arguments):
        """Runs a console script's module with this interpreter (shown as the console script a user types). When it
        fails, the demo ends with its exit status: the command has printed its one line of why."""
        name = "bert-" + module.replace("_", "-")
        argv = [sys.executable, "-m", f"bert_tf.cli.{module}", *arguments]
        if not self.quiet:
            print(f"\n$ {name} {' '.join(arguments)}", flush=True)
            code = subprocess.run(argv).returncode
            if code:
                sys.exit(code)  # the command has said why, in one line
            return
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode:
            raise RuntimeError(f"{name} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")

    def _say(self, line):
        if not self.quiet:
            print(line, flush=True)
