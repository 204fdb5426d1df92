"""The `bert-*` commands (setup.py's console scripts), one module each, all run by `bert_tf.cli.app.run`.

A command's module imports no TensorFlow at its top: the frame parses the flags first, so `--help`, a mistyped flag
or a missing input file answer at once, and then starts TensorFlow with its C++ start-up lines hidden
(`bert_tf.cli.app`).
"""
