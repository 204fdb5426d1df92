"""export/: the TF Serving configs parse as TF Serving's protos, and export/client.py builds gRPC and REST requests
that a server running the exported SavedModel answers (a gRPC PredictionService and a REST endpoint in this test,
since no TF Serving binary installs here)."""

import http.server
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from concurrent import futures

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertPretrainer
from bert_tf.finetuning import BertClassifier
from bert_tf.finetuning.features import encode_texts
from bert_tf.serving import export_classifier
from bert_tf.text.tokenizer import FullTokenizer
from helpers import tiny_config

pytest.importorskip("tensorflow_serving", reason="the `serving` extra (tensorflow-serving-api) is not installed")
import grpc  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format, wrappers_pb2  # noqa: E402
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc  # noqa: E402
from tensorflow_serving.config import model_server_config_pb2  # noqa: E402

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

EXPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "export")
TEXTS = ["Jesus answered them.", "In the beginning God created the heavens and the earth."]


def load_client():
    spec = importlib.util.spec_from_file_location("bert_tf_export_client", os.path.join(EXPORT, "client.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


client = load_client()


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    keras.utils.set_random_seed(8)
    config = tiny_config(vocab_size=30522)
    model = BertClassifier(BertPretrainer(config).encoder, num_classes=3)
    return export_classifier(model, str(tmp_path_factory.mktemp("client") / "classifier" / "1"), ["a", "b", "c"])


def run_signature(models, name, signature, inputs):
    outputs = models[name].signatures[signature or "serving_default"](
        **{k: tf.constant(v) for k, v in inputs.items()})
    return {k: v.numpy() for k, v in outputs.items()}


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """TF Serving's gRPC Predict, answered by the real SavedModel (request and response protos as TF Serving's)."""

    def __init__(self, models):
        self.models = models

    def Predict(self, request, context):
        inputs = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}
        outputs = run_signature(self.models, request.model_spec.name, request.model_spec.signature_name, inputs)
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        for name, value in outputs.items():
            response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
        return response


@pytest.fixture(scope="module")
def servers(classifier_dir):
    models = {"classifier": tf.saved_model.load(classifier_dir)}
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(PredictionService(models), grpc_server)
    grpc_port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()

    class RestHandler(http.server.BaseHTTPRequestHandler):
        """TF Serving's REST predict with the columnar "inputs" format."""

        def do_POST(self):
            match = re.fullmatch(r"/v1/models/(\w+)(?:/versions/\d+)?:predict", self.path)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            inputs = {k: np.array(v, np.int32) for k, v in body["inputs"].items()}
            outputs = run_signature(models, match.group(1), body.get("signature_name"), inputs)
            data = json.dumps({"outputs": {k: v.tolist() for k, v in outputs.items()}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    rest_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RestHandler)
    threading.Thread(target=rest_server.serve_forever, daemon=True).start()
    yield {"grpc": f"127.0.0.1:{grpc_port}", "rest": f"http://127.0.0.1:{rest_server.server_port}", "models": models}
    rest_server.shutdown()
    grpc_server.stop(None)


def test_predict_request_holds_the_tokenized_ids(uncased_vocab):
    inputs = client.encode(TEXTS, None, uncased_vocab, max_seq_length=16)
    want = encode_texts(FullTokenizer(uncased_vocab), TEXTS, None, 16)
    for name in want:
        np.testing.assert_array_equal(inputs[name], want[name])
    request = client.predict_request("classifier", inputs, version=3)
    assert request.model_spec.name == "classifier" and request.model_spec.signature_name == "serving_default"
    assert request.model_spec.version.value == 3
    proto = request.inputs["input_word_ids"]
    assert proto.dtype == tf.int32.as_datatype_enum and [d.size for d in proto.tensor_shape.dim] == [2, 16]
    np.testing.assert_array_equal(tf.make_ndarray(proto), want["input_word_ids"])
    assert tf.make_ndarray(proto)[0, :5].tolist() == [101, 4441, 4660, 2068, 1012]  # [CLS] jesus answered them .


def test_rest_url_and_body():
    assert client.rest_url("http://host:8501/", "encoder") == "http://host:8501/v1/models/encoder:predict"
    assert client.rest_url("http://h:1", "m", 2) == "http://h:1/v1/models/m/versions/2:predict"
    body = client.rest_body({"input_mask": np.ones((1, 3), np.int32)}, "mlm")
    assert json.loads(json.dumps(body)) == {"signature_name": "mlm", "inputs": {"input_mask": [[1, 1, 1]]}}


def test_grpc_and_rest_calls_return_the_savedmodel_outputs(servers, uncased_vocab):
    inputs = client.encode(TEXTS, ["He wept.", "And it was so."], uncased_vocab, max_seq_length=16)
    want = run_signature(servers["models"], "classifier", None, inputs)
    over_grpc = client.predict_grpc(servers["grpc"], client.predict_request("classifier", inputs))
    over_rest = client.predict_rest(client.rest_url(servers["rest"], "classifier"), client.rest_body(inputs))
    for got in (over_grpc, over_rest):
        assert sorted(got) == ["label_ids", "probabilities"]
        np.testing.assert_allclose(got["probabilities"], want["probabilities"], rtol=1e-6)
        np.testing.assert_array_equal(got["label_ids"], want["label_ids"])
    np.testing.assert_allclose(want["probabilities"].sum(-1), 1.0, rtol=1e-6)


def test_client_command_line_against_the_grpc_server(servers, uncased_vocab):
    process = subprocess.run(
        [sys.executable, os.path.join(EXPORT, "client.py"), f"--server={servers['grpc']}", "--model=classifier",
         f"--vocab_file={uncased_vocab}", "--max_seq_length=16", f"--text={TEXTS[0]}", f"--text={TEXTS[1]}"],
        capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stderr[-2000:]
    assert "probabilities [2, 3]" in process.stdout and "label_ids [2]" in process.stdout


def batching_parameters_class():
    """TF Serving's BatchingParameters message (session_bundle_config.proto), whose Python module the
    tensorflow-serving-api wheel does not ship: the fields used here, for parsing the text format strictly."""
    file = descriptor_pb2.FileDescriptorProto(name="bert_tf_test_batching.proto", package="tensorflow.serving",
                                              dependency=["google/protobuf/wrappers.proto"], syntax="proto3")
    message = file.message_type.add(name="BatchingParameters")
    int64, string = ".google.protobuf.Int64Value", ".google.protobuf.StringValue"
    fields = [("max_batch_size", int64), ("batch_timeout_micros", int64), ("max_enqueued_batches", int64),
              ("num_batch_threads", int64), ("thread_pool_name", string)]
    for number, (name, type_name) in enumerate(fields, start=1):
        message.field.add(name=name, number=number, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                          type_name=type_name, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    message.field.add(name="allowed_batch_sizes", number=6, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    message.field.add(name="pad_variable_length_inputs", number=7,
                      type=descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters"))


def test_model_and_batching_configs_parse_as_tf_serving_protos():
    with open(os.path.join(EXPORT, "models.config")) as f:
        config = text_format.Parse(f.read(), model_server_config_pb2.ModelServerConfig())
    models = {c.name: (c.base_path, c.model_platform) for c in config.model_config_list.config}
    assert models == {name: (f"/models/{name}", "tensorflow") for name in ("encoder", "encoder_mlm", "classifier")}
    with open(os.path.join(EXPORT, "batching.config")) as f:
        batching = text_format.Parse(f.read(), batching_parameters_class()())
    assert batching.max_batch_size.value == 64 and batching.num_batch_threads.value == 4
    # TF Serving would pad input_mask with its first value (1): padding must stay off for BERT.
    assert batching.pad_variable_length_inputs is False
