"""Documents -> TFRecords of training instances, streaming and in parallel: the engine of
bert-create-pretraining-data.

The main process reads documents, cuts the stream into shards of about `shard_size_mb` of text, tokenizes each
shard in one batch (FastBertTokenizer) and hands it to a pool of `num_workers` processes, which run the original
algorithm on it (bert_tf/instances/shard.py) and send back serialized records; the main process writes them in
shard order. So memory holds a few shards, not the corpus, and the output depends on the seed and the shard size
but not on the number of workers.

The one departure from the original (which cannot process a corpus larger than memory): it shuffles the documents
and the instances of the whole corpus and draws random next segments from any document; here that happens within
each shard.
"""

import collections
import contextlib
import dataclasses
import gc
import multiprocessing
import os
import signal
import threading
import time

from tqdm import tqdm

from bert_tf.errors import InputError
from bert_tf.instances.shard import TokenizedShard, process_shard
from bert_tf.instances.statistics import InstanceStatistics
from bert_tf.records.writer import RoundRobinWriter
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.vocabulary import SPECIAL_TOKENS
from bert_tf.text.word_segmenter import WordSegmenter


@dataclasses.dataclass
class RunSummary:
    """What a run produced: corpus counts, instance statistics, records per output file, wall time.

    Example:
    >>> summary = create_pretraining_data(documents, tokenizer, ["train.tfrecord"], InstanceOptions())  # doctest: +SKIP
    >>> summary.statistics.instances == sum(summary.records_per_file)  # doctest: +SKIP
    True
    """

    counts: CorpusCounts
    statistics: InstanceStatistics
    output_files: list
    records_per_file: list
    seconds: float
    shards: int
    stopped: bool = False  # `stop` was set: the files hold the shards written until then

    def summary_lines(self, options=None):
        """Lines for people; the run's `InstanceOptions` add what the rules expect."""
        rate = self.statistics.instances / max(self.seconds, 1e-9)
        expected = {"masked_lm_prob": options.masked_lm_prob, "pair_rules": options.pair_rules} if options else {}
        lines = (self.counts.summary_lines() + self.statistics.summary_lines(**expected) +
                 [f"wrote {sum(self.records_per_file)} records to {len(self.output_files)} file(s) from "
                  f"{self.shards} shard(s) in {self.seconds:.1f} s ({rate:,.0f} instances/s)"])
        if self.stopped:
            lines.append(f"stopped on request after {self.shards} complete shard(s): the files hold their records "
                         f"only; run the command again for the whole corpus.")
        return lines


def shard_documents(documents, shard_size_mb):
    """Groups a document stream into lists of consecutive documents holding about shard_size_mb of text each."""
    limit = shard_size_mb * 1e6
    shard, size = [], 0
    for document in documents:
        shard.append(document)
        size += sum(len(sentence) for sentence in document)
        if size >= limit:
            yield shard
            shard, size = [], 0
    if shard:
        yield shard


def _process(args):
    return process_shard(*args)


@contextlib.contextmanager
def _worker_pool(num_workers):
    """A pool of `num_workers` forked processes (None for 0), terminated when the block ends."""
    if num_workers == 0:
        yield None
        return
    # fork: workers need only numpy and this package's numpy code; they never call TensorFlow. gc.freeze keeps the
    # workers' garbage collector off the inherited objects, so their pages stay shared, not copied.
    gc.freeze()
    with _default_sigterm():
        pool = multiprocessing.get_context("fork").Pool(num_workers, initializer=_start_worker)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()
        gc.unfreeze()


@contextlib.contextmanager
def _default_sigterm():
    """SIGTERM's default action while the workers are forked: a worker that `terminate` reaches before its
    initializer ran would otherwise run the main process's handler (which only sets a flag) and live on, and the
    pool's join would wait for it forever (a run that ends at once, e.g. on an empty corpus)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _start_worker():
    # Workers inherit the main process's signal handlers; they must still end when the pool terminates them.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def create_pretraining_data(documents, tokenizer, output_files, options, *, num_workers=None, counts=None,
                            progress=True, stop=None):
    """Writes the training instances of `documents` to `output_files`; returns a `RunSummary`.

    Args:
        documents: an iterable of documents (lists of sentence strings), e.g. from bert_tf.text.corpus.
        tokenizer: a `FullTokenizer`.
        output_files: paths; record k goes to file k mod len(output_files).
        options: `InstanceOptions`: the original flags, the shard size (the unit of shuffling, random next
            documents and parallel work), the records' feature names and compression.
        num_workers: processes that build instances (default: the CPU count); 0 builds them in this process.
        counts: a `CorpusCounts` the reader already updates (lines, undecodable bytes); created if None.
        stop: a `threading.Event` (e.g. set on SIGTERM): once set, no further shard is written, shards in flight
            are dropped, and the files are completed with the shards written so far (`RunSummary.stopped`).

    Raises an InputError, with nothing written, when the documents give no instance.

    Example:
    >>> documents = read_documents("corpus.txt", "sentences", counts)  # doctest: +SKIP
    >>> summary = create_pretraining_data(documents, FullTokenizer("vocab.txt"), ["train.tfrecord"],  # doctest: +SKIP
    ...                                   InstanceOptions(dupe_factor=5, gzip=True), num_workers=2, counts=counts)
    >>> print("\\n".join(summary.summary_lines()))  # doctest: +SKIP
    """
    num_workers = os.cpu_count() if num_workers is None else num_workers
    if num_workers < 0:
        raise InputError(f"num_workers={num_workers} must be >= 0 (0 builds instances in the main process).")
    counts = counts if counts is not None else CorpusCounts()
    vocab = tokenizer.vocabulary.require(SPECIAL_TOKENS, "pre-training data", pad_first=True)
    segmenter = WordSegmenter(options.word_segmenter) if options.word_segmenter else None
    statistics = InstanceStatistics(options.max_seq_length, options.max_predictions_per_seq)
    start = time.time()
    written_shards = 0

    def stopping():
        return stop is not None and stop.is_set()

    with tqdm(desc="documents", unit=" doc", disable=not progress, mininterval=1.0) as bar, \
            _worker_pool(num_workers) as pool, RoundRobinWriter(output_files, gzip=options.gzip) as writer:
        pending = collections.deque()

        def write_result(result):
            nonlocal written_shards
            for record in result.records:
                writer.write(record)
            statistics.merge(result.statistics)
            written_shards += 1
            bar.set_postfix(instances=statistics.instances, refresh=False)

        for index, shard_docs in enumerate(shard_documents(documents, options.shard_size_mb)):
            if stopping():
                break
            shard = TokenizedShard.from_documents(index, shard_docs, tokenizer, counts, segmenter)
            args = (shard, options, vocab)
            if pool is None:
                write_result(_process(args))
            else:
                pending.append(pool.apply_async(_process, (args,)))
                # Bounded read-ahead: memory holds at most 2 shards per worker.
                while len(pending) >= 2 * num_workers and not stopping():
                    write_result(pending.popleft().get())
            bar.update(len(shard_docs))
        while pending and not stopping():
            write_result(pending.popleft().get())
        stopped = stopping()
        if not statistics.instances and not stopped:
            raise InputError(
                f"The corpus gave no training instance ({counts.files} input(s), {counts.lines} lines, "
                f"{counts.documents} documents with tokens): pass UTF-8 text, one sentence per line and a "
                f"blank line between documents (or --input_format=text for raw text); nothing was written.")
        records_per_file = list(writer.records_per_file)
    return RunSummary(counts, statistics, list(output_files), records_per_file, time.time() - start, written_shards,
                      stopped)
