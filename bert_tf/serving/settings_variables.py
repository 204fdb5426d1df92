"""The tokenizer settings an exported SavedModel carries: TF Hub's `do_lower_case` bool variable, and
`strip_accents` beside it.

TF Hub's BERT models have `do_lower_case` only, meaning both lower-casing and accent stripping (the original's
flag). Here `do_lower_case` holds lower-casing alone and `strip_accents` the stripping, so the two say what the
model's text went through even when they differ (a vocab that lower-cases and keeps accents has
`do_lower_case=True, strip_accents=False`). A SavedModel written before `strip_accents` existed reads as the
original: stripping as `do_lower_case`.

Example:
>>> import tempfile
>>> module, export_dir = tf.Module(), tempfile.mkdtemp()
>>> module.do_lower_case, module.strip_accents = settings_variables(TokenizerSettings.of(True, False))
>>> tf.saved_model.save(module, export_dir)
>>> saved_settings(export_dir)
TokenizerSettings(do_lower_case=True, strip_accents=False)
"""

import os

import tensorflow as tf

from bert_tf.text.tokenizer_settings import TokenizerSettings

_CHECKPOINT_KEY = "{}/.ATTRIBUTES/VARIABLE_VALUE"


def settings_variables(settings):
    """The two bool variables of `settings` (a `TokenizerSettings`), to be set as the module's `do_lower_case` and
    `strip_accents` attributes (the names `saved_settings` reads)."""
    return (tf.Variable(settings.do_lower_case, trainable=False, name="do_lower_case"),
            tf.Variable(settings.strip_accents, trainable=False, name="strip_accents"))


def saved_settings(export_dir):
    """The `TokenizerSettings` of a SavedModel written with `settings_variables`, read from its variables file
    without loading the model."""
    checkpoint = os.path.join(export_dir, "variables", "variables")
    saved = dict(tf.train.list_variables(checkpoint))
    found = {name: bool(tf.train.load_variable(checkpoint, _CHECKPOINT_KEY.format(name)))
             for name in ("do_lower_case", "strip_accents") if _CHECKPOINT_KEY.format(name) in saved}
    return TokenizerSettings.of(found.get("do_lower_case", True), found.get("strip_accents"))
