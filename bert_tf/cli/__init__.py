"""The `bert-*` commands (setup.py's console scripts), one module each, all run by `bert_tf.cli.app.run`.

TensorFlow is imported here, before any command's module, so that its C++ start-up lines can be hidden whatever the
command imports at its top (see `bert_tf.cli.app`).
"""

from bert_tf.cli.app import start_tensorflow_quietly

start_tensorflow_quietly()
