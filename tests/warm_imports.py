"""What the fork server of `warm_commands` imports once, before it forks a child per command: TensorFlow, Keras,
tensorflow-text and the bert_tf modules the commands import in `main`. Modules only: no TensorFlow op runs here, and
no command module is imported (each defines absl flags when it runs as the child's `__main__`)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402,F401
import tensorflow  # noqa: E402,F401
import tensorflow_text  # noqa: E402,F401

import bert_tf.conversion.from_hf  # noqa: E402,F401
import bert_tf.finetuning.run_classifier  # noqa: E402,F401
import bert_tf.instances.pipeline  # noqa: E402,F401
import bert_tf.records.checker  # noqa: E402,F401
import bert_tf.serving.export  # noqa: E402,F401
import bert_tf.text.tokenizer  # noqa: E402,F401
import bert_tf.training.pretraining  # noqa: E402,F401
