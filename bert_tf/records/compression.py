"""Which compression a TFRecord file uses: the one place it is detected."""

import tensorflow as tf

from bert_tf.errors import InputError

COMPRESSIONS = ("auto", "", "GZIP", "ZLIB")
_GZIP_MAGIC = b"\x1f\x8b"


def detect_compression(path, compression="auto"):
    """"GZIP" if the file starts with the gzip magic bytes, else "" (uncompressed); an explicit value is checked.

    ZLIB streams carry no magic bytes, so ZLIB files must be named (the writers here write "" or GZIP).

    Example:
    >>> detect_compression("train.tfrecord")  # doctest: +SKIP
    ''
    """
    if compression not in COMPRESSIONS:
        raise InputError(f"compression={compression!r} is unknown: use one of {COMPRESSIONS} "
                         f"('auto' recognises gzip; ZLIB files must be named).")
    if compression != "auto":
        return compression
    with tf.io.gfile.GFile(path, "rb") as f:
        return "GZIP" if f.read(2) == _GZIP_MAGIC else ""
