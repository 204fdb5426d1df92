"""Fine-tuning: task models on the encoder (Keras fit) and the original's fine-tuning optimizer. An exported
encoder SavedModel comes back as a native encoder with `bert_tf.serving.load_encoder_from_saved_model`.

Example:
    model = BertClassifier(bert_tf.load_encoder("model_dir"), num_classes=2)
    model.compile(optimizer=create_finetuning_optimizer(2e-5, num_train_steps),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(train_features, train_labels, epochs=3)
"""

from bert_tf.finetuning.classifier import BertClassifier
from bert_tf.finetuning.optimizer import create_finetuning_optimizer
from bert_tf.finetuning.span_qa import BertSpanQA
from bert_tf.finetuning.token_classifier import BertTokenClassifier

__all__ = [
    "BertClassifier",
    "create_finetuning_optimizer",
    "BertSpanQA",
    "BertTokenClassifier",
]
