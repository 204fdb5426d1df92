"""bert_tf: BERT pre-training for TensorFlow and Keras 3, faithful to the original paper and code."""

from bert_tf.model_dir import load_encoder, load_pretrainer
from bert_tf.config import BertConfig
from bert_tf.finetuning.classifier import BertClassifier
from bert_tf.finetuning.span_qa import BertSpanQA
from bert_tf.finetuning.token_classifier import BertTokenClassifier
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.pretrainer import BertPretrainer

__version__ = "0.1.0"
