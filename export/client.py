"""A small client for the exported models on TF Serving: gRPC (tensorflow-serving-api) or REST (JSON).

Text is tokenized here, with the model's vocab, exactly as bert-finetune tokenized its training data, so a stock
TF Serving (no tensorflow-text ops) serves the encoder or classifier alone:

  python export/client.py --server=localhost:8500 --model=classifier --vocab_file=exported/encoder/1/assets/vocab.txt \
      --text="Jesus answered them" --text="In the beginning God created the heavens"
  python export/client.py --rest=http://localhost:8501 --model=encoder --vocab_file=... --text="Hello world"

Prints each output's name, shape and values (probabilities for a classifier, pooled_output for the encoder).
"""

import json
import sys
import urllib.request

import numpy as np
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS


def encode(texts, texts_b, vocab_file, do_lower_case=None, max_seq_length=128, strip_accents=None):
    """The three id arrays for `texts` (and second segments `texts_b`, or None): [CLS] A [SEP] (B [SEP]), normalized
    as the vocab's settings file says (`do_lower_case`, `strip_accents` where given; else the original's uncased)."""
    from bert_tf.finetuning.features import encode_texts
    from bert_tf.text.tokenizer import FullTokenizer
    return encode_texts(FullTokenizer.for_vocab(vocab_file, do_lower_case, strip_accents), list(texts),
                        texts_b and list(texts_b), max_seq_length)


def predict_request(model_name, inputs, signature_name="serving_default", version=None):
    """A gRPC `PredictRequest` with one TensorProto per input (int32 for the id tensors).

    Example:
    >>> request = predict_request("encoder", encode(["Hello"], None, "vocab.txt", max_seq_length=8))
    >>> request.inputs["input_word_ids"].tensor_shape.dim[1].size
    8
    """
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    if version is not None:
        request.model_spec.version.value = int(version)
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(np.asarray(value)))
    return request


def predict_grpc(server, request, timeout=30.0):
    """Sends `request` to TF Serving's gRPC port (host:8500); returns {output name: numpy array}."""
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    with grpc.insecure_channel(server) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(request, timeout)
    return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}


def rest_url(base_url, model_name, version=None):
    """TF Serving's REST predict URL: <base>/v1/models/<name>[/versions/<n>]:predict."""
    path = f"/v1/models/{model_name}" + (f"/versions/{int(version)}" if version is not None else "")
    return base_url.rstrip("/") + path + ":predict"


def rest_body(inputs, signature_name="serving_default"):
    """The JSON body of a REST predict call, in the columnar ("inputs") format."""
    return {"signature_name": signature_name, "inputs": {name: np.asarray(v).tolist() for name, v in inputs.items()}}


def predict_rest(url, body, timeout=30.0):
    """POSTs `body` to `url`; returns {output name: numpy array} (a single output comes back unnamed as
    "outputs")."""
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        outputs = json.loads(response.read().decode("utf-8"))["outputs"]
    if not isinstance(outputs, dict):
        outputs = {"outputs": outputs}
    return {name: np.asarray(value) for name, value in outputs.items()}


def define_flags():
    """The command line's flags (defined only when run as a script, so importing this module defines none)."""
    flags.DEFINE_string("server", None, "gRPC address of TF Serving (host:8500).")
    flags.DEFINE_string("rest", None, "Instead of --server: REST base URL (http://host:8501).")
    flags.DEFINE_string("model", "classifier", "Model name in the server's model config.")
    flags.DEFINE_integer("model_version", None, "A specific version (default: the server's latest).")
    flags.DEFINE_string("signature_name", "serving_default", "Signature to call.")
    flags.DEFINE_string("vocab_file", None, "The model's vocab (e.g. <export>/encoder/1/assets/vocab.txt).")
    flags.DEFINE_bool("do_lower_case", None, "Whether the model is uncased (default: the vocab's settings file, "
                      "vocab.settings.json, else true; a SavedModel's assets have none: pass the model's).")
    flags.DEFINE_bool("strip_accents", None, "Whether the model strips accents (default: the vocab's settings file, "
                      "else as --do_lower_case).")
    flags.DEFINE_integer("max_seq_length", 128, "Tokens per text, [CLS] and [SEP]s included.")
    flags.DEFINE_multi_string("text", None, "A text to send (repeat for a batch).")
    flags.DEFINE_multi_string("text_b", None, "Second segments for sentence-pair models, one per --text.")


def main(argv):
    del argv
    if bool(FLAGS.server) == bool(FLAGS.rest):
        sys.exit("client.py: error: pass exactly one of --server (gRPC) and --rest.")
    if FLAGS.text_b and len(FLAGS.text_b) != len(FLAGS.text):
        sys.exit(f"client.py: error: {len(FLAGS.text_b)} --text_b for {len(FLAGS.text)} --text; pass one each.")
    inputs = encode(FLAGS.text, FLAGS.text_b, FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
                    FLAGS.strip_accents)
    if FLAGS.server:
        outputs = predict_grpc(FLAGS.server, predict_request(FLAGS.model, inputs, FLAGS.signature_name,
                                                             FLAGS.model_version))
    else:
        outputs = predict_rest(rest_url(FLAGS.rest, FLAGS.model, FLAGS.model_version),
                               rest_body(inputs, FLAGS.signature_name))
    np.set_printoptions(precision=4, suppress=True, threshold=64)
    for name, value in sorted(outputs.items()):
        print(f"{name} {list(value.shape)}\n{value}")


if __name__ == "__main__":
    define_flags()
    flags.mark_flags_as_required(["vocab_file", "text"])
    app.run(main)
