"""A TFDS text dataset, already prepared in a local data_dir -> documents (one per example, split into sentences).

Nothing downloads here: the dataset must have been prepared (`download_and_prepare`) into `data_dir` before, on
this machine or another. `tfds.builder` finds it by name from the files alone when its builder code is not
importable (e.g. `wikipedia/20230601.en`, prepared elsewhere and copied over).
"""

import tensorflow_datasets as tfds

from bert_tf.errors import InputFileNotFoundError
from bert_tf.text.corpus import decode
from bert_tf.text.sentences import split_sentences


def read_tfds_documents(name, data_dir, counts, split="train", text_key="text"):
    """Documents of the `text_key` feature of every example of a prepared TFDS dataset.

    Example:
    >>> documents = read_tfds_documents("wikipedia/20230601.en", "/data/tfds", CorpusCounts())  # doctest: +SKIP
    >>> next(iter(documents))[:2]  # doctest: +SKIP
    ['Anarchism is a political philosophy ...', '...']
    """
    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except tfds.core.registered.DatasetNotFoundError as e:
        raise InputFileNotFoundError(f"TFDS dataset {name!r} is neither prepared in data_dir={data_dir!r} nor known by "
                                     f"code: prepare it there first (nothing downloads here). ({e})") from None
    if not builder.is_prepared():
        raise InputFileNotFoundError(f"TFDS dataset {name!r} is not prepared in data_dir={data_dir!r}: run its "
                                     f"download_and_prepare(), or point --tfds_data_dir at the directory that holds "
                                     f"it.")
    features = builder.info.features
    if text_key not in features:
        raise KeyError(f"TFDS dataset {name!r} has no feature {text_key!r}: its features are {sorted(features)}; "
                       f"pass --tfds_text_key.")
    counts.files += 1
    dataset = builder.as_dataset(split=split, shuffle_files=False)
    for example in tfds.as_numpy(dataset):
        counts.lines += 1
        value = example[text_key]
        yield split_sentences(decode(value, counts) if isinstance(value, bytes) else str(value))
