"""Reading TFRecord files so that a broken file is named: its records checked against its size.

tf.data's `TFRecordDataset` reports a corrupt record as a `DataLossError` without the file's name, and a file cut
inside a record header (the first 12 bytes of a record) ends silently, as if the file were complete. So every
file is read with its byte count checked: the records of an uncompressed file must cover its size exactly, those
of a gzip file the uncompressed size that its trailer stores (mod 2**32). A read error ends the file's records and
the check then fails with the file's name. ZLIB files carry no size and are read unchecked.
"""

import re

import tensorflow as tf

from bert_tf.errors import InputError

# Bytes of framing around each record in a TFRecord file: uint64 length, its crc32c, the data's crc32c.
_RECORD_FRAMING_BYTES = 16
# Records counted at once by the truncation check.
_BLOCK_RECORDS = 256


def expected_record_bytes(path, compression):
    """What the records' framed sizes must add up to: the file size, the gzip trailer's size mod 2**32, or -1.

    -1 (ZLIB) means "not checkable". A gzip file written by concatenating several gzip streams stores only the
    last stream's size: such a file fails the check and has to be re-compressed as one stream.
    """
    if compression == "":
        return tf.io.gfile.stat(path).length
    if compression == "GZIP":
        size = tf.io.gfile.stat(path).length
        if size < 18:  # a gzip header and trailer alone take 18 bytes
            return size + 1  # unreachable total: the check reports the file as truncated
        with tf.io.gfile.GFile(path, "rb") as f:
            f.seek(size - 4)
            return int.from_bytes(f.read(4), "little")
    return -1


@tf.autograph.experimental.do_not_convert  # runs inside `interleave`; TensorFlow ops only
def checked_records(path, compression, expected_bytes, buffer_size=None):
    """A file's serialized records as (file name, record) pairs; a read error or short file fails naming the file.

    `path`, `compression` and `expected_bytes` may be tensors (this runs inside `interleave`). Bytes are counted
    per block of records, which keeps the check's cost per record small. Restoring an iterator checkpoint
    restores the running count with the file position.
    """
    blocks = tf.data.TFRecordDataset(path, compression_type=compression, buffer_size=buffer_size)
    # A read error ends this file's records here; the byte count below then names the file.
    blocks = blocks.ignore_errors().batch(_BLOCK_RECORDS)
    # An empty end-of-file block triggers the check and then yields no record.
    blocks = blocks.map(lambda block: (block, False)).concatenate(
        tf.data.Dataset.from_tensors((tf.constant([], tf.string), True)))
    check_modulo = tf.where(tf.equal(compression, "GZIP"), tf.constant(2 ** 32, tf.int64),
                            tf.constant(2 ** 62, tf.int64))

    def check_total(total):
        ok = tf.logical_or(tf.less(expected_bytes, 0),
                           tf.equal(tf.math.floormod(total, check_modulo), expected_bytes))
        message = join_message(
            "TFRecord file ", path, " is truncated, corrupt or unreadable: its readable records cover ", total,
            " bytes (mod 2**32 for gzip) of the ", expected_bytes, " it should hold. Write the file again or leave "
            "it out of the input files.")
        with tf.control_dependencies([tf.debugging.Assert(ok, [message], name="check_tfrecord_file")]):
            return tf.identity(total)

    def count(total, element):
        block, is_end = element
        total += tf.reduce_sum(tf.cast(tf.strings.length(block), tf.int64) + _RECORD_FRAMING_BYTES)
        total = tf.cond(is_end, lambda: check_total(total), lambda: total)
        return total, (tf.fill(tf.shape(block), path), block)

    return blocks.scan(tf.constant(0, tf.int64), count).unbatch()


def join_message(*parts):
    """One string tensor from strings and scalar tensors (tf.strings.format would quote the file names)."""
    return tf.strings.join([p if isinstance(p, str) or p.dtype == tf.string else tf.strings.as_string(p)
                            for p in parts])


def read_error_text(error):
    """The words of a TensorFlow read error a user can read ("corrupted record at 510"), without the function and
    op names TensorFlow wraps them in."""
    line = next((line for line in error.message.splitlines() if line.strip()), error.message)
    line = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", line)
    return re.sub(r"\s*\[\[.*|\s*\[Op:.*", "", line).strip()


def first_record(path, compression):
    """The first serialized record of a file (bytes), or None if it has none; read errors name the file."""
    try:
        for record in tf.data.TFRecordDataset(path, compression_type=compression).take(1):
            return record.numpy()
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
        raise InputError(f"TFRecord file {path} cannot be read ({read_error_text(error)}): check that it is a "
                         f"TFRecord file (compression={compression!r}) and recreate it if it is corrupt."
                         ) from None
    return None
