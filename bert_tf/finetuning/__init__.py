"""Fine-tuning: task models on the encoder (Keras fit) and the original's fine-tuning optimizer. An exported
encoder SavedModel comes back as a native encoder with `bert_tf.serving.load_encoder_from_saved_model`.

Example:
    model = BertClassifier(bert_tf.load_encoder("model_dir"), num_classes=2)
    model.compile(optimizer=create_finetuning_optimizer(2e-5, num_train_steps),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(train_features, train_labels, epochs=3)

The names load on first use (`import bert_tf.finetuning` imports no Keras): a saved task model loads once its class
is imported, as Keras needs for any custom class:
    from bert_tf.finetuning import BertClassifier
    model = keras.models.load_model("finetuned/best.keras")
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "BertClassifier": "bert_tf.finetuning.classifier",
    "create_finetuning_optimizer": "bert_tf.finetuning.optimizer",
    "BertSpanQA": "bert_tf.finetuning.span_qa",
    "BertTokenClassifier": "bert_tf.finetuning.token_classifier",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
