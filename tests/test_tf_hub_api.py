"""Our SavedModels as drop-in replacements of TF Hub's `bert_en_uncased_preprocess/3` and
`bert_en_uncased_L-12_H-768_A-12/4`: the model-building code of TensorFlow's "Classify text with BERT" and
"Solve GLUE tasks using BERT on TPU" tutorials, of the Model Garden fine-tuning guide and of the TF Hub model
pages, re-typed with only the handles changed (and datasets shrunk to a few sentences), run in fresh processes
under tf-keras (TF_USE_LEGACY_KERAS=1, as the tutorials need since TF 2.16) and under Keras 3."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertPretrainer
from bert_tf.model_dir import write_model_dir
from bert_tf.serving import export_model_dir
from bert_tf.text.tokenizer import FullTokenizer
from helpers import tiny_config

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

TOLERANCE = 1e-5

# What every tf-keras script starts with: the TF Hub tutorials' imports, after the switch to tf-keras.
TF_KERAS_PRELUDE = """
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text as text  # registers the preprocessing model's ops
tfhub_handle_encoder, tfhub_handle_preprocess, work_dir = sys.argv[1:4]
assert tf.keras.__name__.startswith("tf_keras"), tf.keras.__name__
def report(**values):
    print(json.dumps({k: v if isinstance(v, list) else np.asarray(v).tolist() for k, v in values.items()}))
"""


@pytest.fixture(scope="module")
def hub_models(tmp_path_factory, uncased_vocab):
    """A random tiny BERT (real uncased vocab, 128 positions) exported by `export_model_dir`: encoder (+ mlm) and
    preprocessing at the tutorials' seq_length of 128."""
    root = tmp_path_factory.mktemp("hub")
    keras.utils.set_random_seed(11)
    config = tiny_config(vocab_size=30522, num_hidden_layers=1, max_position_embeddings=128)
    pretrainer = BertPretrainer(config)
    write_model_dir(str(root / "model"), pretrainer, uncased_vocab)
    paths = export_model_dir(str(root / "model"), str(root / "exported"))
    return {"root": root, "pretrainer": pretrainer, **paths}


def run_script(body, hub_models, tmp_path, prelude=TF_KERAS_PRELUDE, handles=("encoder", "preprocessing")):
    """Runs `prelude + body` in a fresh Python; returns the JSON it printed on its last line."""
    script = tmp_path / "script.py"
    script.write_text(prelude + textwrap.dedent(body))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_USE_LEGACY_KERAS", None)
    process = subprocess.run([sys.executable, str(script)] + [hub_models[h] for h in handles] + [str(tmp_path)],
                             capture_output=True, text=True, timeout=600, env=env)
    assert process.returncode == 0, process.stderr[-4000:]
    return json.loads(process.stdout.strip().splitlines()[-1])


def packed(texts_a, texts_b=None, seq_length=128, vocab=None):
    """What the original run_classifier's features are for these texts (the reference packing)."""
    from bert_tf.finetuning.features import encode_texts
    return encode_texts(FullTokenizer(vocab, do_lower_case=True), texts_a, texts_b, seq_length)


def keras_encoder_outputs(hub_models, features):
    outputs = hub_models["pretrainer"].encoder(features, training=False)
    return {k: keras.ops.convert_to_numpy(outputs[k]) for k in ("pooled_output", "sequence_output")}


@pytest.mark.large
def test_classify_text_with_bert_tutorial(hub_models, tmp_path, uncased_vocab):
    """The tutorial's first cells (a callable preprocessing root, no signature=), its classifier, a short fit,
    and its export step: `classifier_model.save` and `tf.saved_model.load` give the same predictions."""
    result = run_script("""
        bert_preprocess_model = hub.KerasLayer(tfhub_handle_preprocess)
        text_test = ['this is such an amazing movie!']
        text_preprocessed = bert_preprocess_model(text_test)

        print(f'Keys       : {list(text_preprocessed.keys())}')
        print(f'Shape      : {text_preprocessed["input_word_ids"].shape}')
        print(f'Word Ids   : {text_preprocessed["input_word_ids"][0, :12]}')
        print(f'Input Mask : {text_preprocessed["input_mask"][0, :12]}')
        print(f'Type Ids   : {text_preprocessed["input_type_ids"][0, :12]}')

        bert_model = hub.KerasLayer(tfhub_handle_encoder)
        bert_results = bert_model(text_preprocessed)

        print(f'Loaded BERT: {tfhub_handle_encoder}')
        print(f'Pooled Outputs Shape:{bert_results["pooled_output"].shape}')
        print(f'Pooled Outputs Values:{bert_results["pooled_output"][0, :12]}')
        print(f'Sequence Outputs Shape:{bert_results["sequence_output"].shape}')
        print(f'Sequence Outputs Values:{bert_results["sequence_output"][0, :12]}')

        def build_classifier_model():
          text_input = tf.keras.layers.Input(shape=(), dtype=tf.string, name='text')
          preprocessing_layer = hub.KerasLayer(tfhub_handle_preprocess, name='preprocessing')
          encoder_inputs = preprocessing_layer(text_input)
          encoder = hub.KerasLayer(tfhub_handle_encoder, trainable=True, name='BERT_encoder')
          outputs = encoder(encoder_inputs)
          net = outputs['pooled_output']
          net = tf.keras.layers.Dropout(0.1)(net)
          net = tf.keras.layers.Dense(1, activation=None, name='classifier')(net)
          return tf.keras.Model(text_input, net)

        classifier_model = build_classifier_model()
        bert_raw_result = classifier_model(tf.constant(text_test))
        print(tf.sigmoid(bert_raw_result))

        loss = tf.keras.losses.BinaryCrossentropy(from_logits=True)
        metrics = tf.metrics.BinaryAccuracy()
        # The tutorial's AdamW comes from tf-models-official; plain Adam keeps the test to tf-keras.
        classifier_model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss=loss, metrics=metrics)
        reviews = ['a wonderful film', 'terrible and boring', 'i loved it', 'i hated it'] * 2
        train_ds = tf.data.Dataset.from_tensor_slices((reviews, [1., 0., 1., 0.] * 2)).batch(4)
        encoder_before = [w.numpy() for w in classifier_model.get_layer('BERT_encoder').trainable_weights]
        history = classifier_model.fit(x=train_ds, epochs=2, verbose=0)
        encoder_after = [w.numpy() for w in classifier_model.get_layer('BERT_encoder').trainable_weights]

        saved_model_path = os.path.join(work_dir, 'imdb_bert')
        classifier_model.save(saved_model_path, include_optimizer=False)
        reloaded_model = tf.saved_model.load(saved_model_path)

        examples = ['this is such an amazing movie!', 'The movie was great!', 'The movie was meh.',
                    'The movie was okish.', 'The movie was terrible...']
        reloaded_results = tf.sigmoid(reloaded_model(tf.constant(examples)))
        original_results = tf.sigmoid(classifier_model(tf.constant(examples)))
        report(keys=sorted(text_preprocessed), word_ids=text_preprocessed["input_word_ids"],
               mask=text_preprocessed["input_mask"], types=text_preprocessed["input_type_ids"],
               pooled=bert_results["pooled_output"], sequence=bert_results["sequence_output"],
               encoder_weights=len(encoder_before),
               encoder_moved=max(float(np.abs(a - b).max()) for a, b in zip(encoder_before, encoder_after)),
               reloaded=reloaded_results, original=original_results)
    """, hub_models, tmp_path)
    want = packed(["this is such an amazing movie!"], vocab=uncased_vocab)
    assert result["keys"] == ["input_mask", "input_type_ids", "input_word_ids"]
    for key, name in (("word_ids", "input_word_ids"), ("mask", "input_mask"), ("types", "input_type_ids")):
        assert result[key] == want[name].tolist()
    reference = keras_encoder_outputs(hub_models, want)
    assert np.max(np.abs(np.array(result["pooled"]) - reference["pooled_output"])) <= TOLERANCE
    assert np.max(np.abs(np.array(result["sequence"]) - reference["sequence_output"])) <= TOLERANCE
    assert result["encoder_weights"] == 23 and result["encoder_moved"] > 1e-5  # fit trained the encoder
    np.testing.assert_allclose(result["reloaded"], result["original"], atol=1e-6)


@pytest.mark.large
def test_solve_glue_tasks_tutorial(hub_models, tmp_path, uncased_vocab):
    """The GLUE tutorial's preprocessing model (`tokenize` and `bert_pack_inputs` through hub.KerasLayer), its
    Classifier subclass, a short fit, and its export of one Keras model from text to logits, which saves only
    because the tracked `tokenize` owns the vocab table; reloaded, it predicts as before."""
    result = run_script("""
        def make_bert_preprocess_model(sentence_features, seq_length=128):
          input_segments = [
              tf.keras.layers.Input(shape=(), dtype=tf.string, name=ft)
              for ft in sentence_features]
          bert_preprocess = hub.load(tfhub_handle_preprocess)
          tokenizer = hub.KerasLayer(bert_preprocess.tokenize, name='tokenizer')
          segments = [tokenizer(s) for s in input_segments]
          truncated_segments = segments
          packer = hub.KerasLayer(bert_preprocess.bert_pack_inputs,
                                  arguments=dict(seq_length=seq_length),
                                  name='packer')
          model_inputs = packer(truncated_segments)
          return tf.keras.Model(input_segments, model_inputs)

        test_preprocess_model = make_bert_preprocess_model(['my_input1', 'my_input2'])
        test_text = [np.array(['some random test sentence']),
                     np.array(['another sentence'])]
        text_preprocessed = test_preprocess_model(test_text)

        def build_classifier_model(num_classes):

          class Classifier(tf.keras.Model):
            def __init__(self, num_classes):
              super(Classifier, self).__init__(name="prediction")
              self.encoder = hub.KerasLayer(tfhub_handle_encoder, trainable=True)
              self.dropout = tf.keras.layers.Dropout(0.1)
              self.dense = tf.keras.layers.Dense(num_classes)

            def call(self, preprocessed_text):
              encoder_outputs = self.encoder(preprocessed_text)
              pooled_output = encoder_outputs["pooled_output"]
              x = self.dropout(pooled_output)
              x = self.dense(x)
              return x

          model = Classifier(num_classes)
          return model

        test_classifier_model = build_classifier_model(2)
        bert_raw_result = test_classifier_model(text_preprocessed)
        print(tf.sigmoid(bert_raw_result))

        sentence_features = ['sentence1', 'sentence2']
        bert_preprocess_model = make_bert_preprocess_model(sentence_features)
        pairs = {'sentence1': ['the cat sat', 'a dog ran', 'birds fly', 'fish swim'],
                 'sentence2': ['a cat sat', 'the cat slept', 'birds can fly', 'cows moo']}
        labels = [1, 0, 1, 0]
        dataset = tf.data.Dataset.from_tensor_slices((pairs, labels)).batch(2).map(
            lambda ex, label: (bert_preprocess_model(ex), label))
        classifier_model = build_classifier_model(2)
        loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        classifier_model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss=loss, metrics=['accuracy'])
        classifier_model.fit(x=dataset, epochs=1, verbose=0)

        saved_model_path = os.path.join(work_dir, 'glue_bert')
        preprocess_inputs = bert_preprocess_model.inputs
        bert_encoder_inputs = bert_preprocess_model(preprocess_inputs)
        bert_outputs = classifier_model(bert_encoder_inputs)
        model_for_export = tf.keras.Model(preprocess_inputs, bert_outputs)

        save_options = tf.saved_model.SaveOptions(experimental_io_device='/job:localhost')
        model_for_export.save(saved_model_path, include_optimizer=False, options=save_options)

        with tf.device('/job:localhost'):
          reloaded_model = tf.saved_model.load(saved_model_path)
        test_row = [tf.constant(['the cat sat']), tf.constant(['a cat sat'])]
        result = reloaded_model(test_row, training=False)
        serving_model = reloaded_model.signatures['serving_default']
        serving_result = serving_model(sentence1=tf.constant(['the cat sat']), sentence2=tf.constant(['a cat sat']))
        report(word_ids=text_preprocessed["input_word_ids"], types=text_preprocessed["input_type_ids"],
               reloaded=result, serving=list(serving_result.values())[0],
               original=model_for_export([tf.constant(['the cat sat']), tf.constant(['a cat sat'])]))
    """, hub_models, tmp_path)
    want = packed(["some random test sentence"], ["another sentence"], vocab=uncased_vocab)
    assert result["word_ids"] == want["input_word_ids"].tolist()
    assert result["types"] == want["input_type_ids"].tolist()
    np.testing.assert_allclose(result["reloaded"], result["original"], atol=1e-6)
    np.testing.assert_allclose(result["serving"], result["original"], atol=1e-6)


@pytest.mark.large  # a round trip through tensorflow-hub and tf-keras, like the tutorials above
def test_tf_hub_model_pages_api(hub_models, tmp_path, uncased_vocab):
    """The preprocessor page (tokenize, optional seq_length, rank-2 and rank-3 segments, special tokens), the
    encoder page (default output, `.mlm` dict in and out, trainable) and the Model Garden guide's call."""
    result = run_script("""
        preprocessor = hub.load(tfhub_handle_preprocess)
        text_inputs = [tf.keras.layers.Input(shape=(), dtype=tf.string)]
        tokenize = hub.KerasLayer(preprocessor.tokenize)
        tokenized_inputs = [tokenize(segment) for segment in text_inputs]
        seq_length = 128  # Your choice here.
        bert_pack_inputs = hub.KerasLayer(
            preprocessor.bert_pack_inputs,
            arguments=dict(seq_length=seq_length))  # Optional argument.
        encoder_inputs = bert_pack_inputs(tokenized_inputs)
        pack_model = tf.keras.Model(text_inputs, encoder_inputs)

        special = {k: int(v) for k, v in preprocessor.tokenize.get_special_tokens_dict().items()}
        words = preprocessor.tokenize(tf.constant(['Hello world!', 'BERT']))
        default_length = preprocessor.bert_pack_inputs([words])
        rank2 = preprocessor.bert_pack_inputs([words.merge_dims(-2, -1), words], seq_length=16)
        rank3 = preprocessor.bert_pack_inputs([words, words], seq_length=tf.constant(16))

        text_input = tf.keras.layers.Input(shape=(), dtype=tf.string)
        preprocessor_layer = hub.KerasLayer(tfhub_handle_preprocess)
        encoder_inputs = preprocessor_layer(text_input)
        encoder = hub.KerasLayer(tfhub_handle_encoder, trainable=True)
        outputs = encoder(encoder_inputs)
        pooled_output = outputs["pooled_output"]      # [batch_size, 768].
        sequence_output = outputs["sequence_output"]  # [batch_size, seq_length, 768].
        embedding_model = tf.keras.Model(text_input, pooled_output)
        sentences = tf.constant(["Hello world!"])

        hub_encoder = hub.KerasLayer(tfhub_handle_encoder, trainable=True)
        glue_batch = pack_model([sentences])
        result = hub_encoder(
            inputs=dict(
                input_word_ids=glue_batch['input_word_ids'],
                input_mask=glue_batch['input_mask'],
                input_type_ids=glue_batch['input_type_ids'],),
            training=False,
        )

        loaded = hub.load(tfhub_handle_encoder)
        mlm_inputs = dict(glue_batch, masked_lm_positions=tf.constant([[1, 2]]))
        mlm_outputs = loaded.mlm(mlm_inputs)
        mlm_layer = hub.KerasLayer(loaded.mlm, trainable=True)
        mlm_from_layer = mlm_layer(mlm_inputs)
        report(special=[special[k] for k in ('vocab_size', 'start_of_sequence_id', 'end_of_segment_id',
                                             'padding_id', 'mask_id')],
               words=words.to_list(), default_shape=default_length['input_word_ids'].shape,
               rank2=rank2['input_word_ids'], rank3=rank3['input_word_ids'],
               embedding=embedding_model(sentences), result_keys=sorted(result),
               default=result['default'], pooled=result['pooled_output'],
               mlm_keys=sorted(mlm_outputs), mlm_logits=mlm_outputs['mlm_logits'],
               mlm_layer_logits=mlm_from_layer['mlm_logits'],
               mlm_trainable=len(mlm_layer.trainable_weights), encoder_trainable=len(hub_encoder.trainable_weights))
    """, hub_models, tmp_path)
    assert result["special"] == [30522, 101, 102, 0, 103]
    assert result["words"] == [[[7592], [2088], [999]], [[14324]]]
    assert result["default_shape"] == [2, 128]
    pair = packed(["Hello world!", "BERT"], ["Hello world!", "BERT"], seq_length=16, vocab=uncased_vocab)
    assert result["rank2"] == result["rank3"] == pair["input_word_ids"].tolist()
    features = packed(["Hello world!"], vocab=uncased_vocab)
    reference = keras_encoder_outputs(hub_models, features)
    assert np.max(np.abs(np.array(result["embedding"]) - reference["pooled_output"])) <= TOLERANCE
    assert result["result_keys"] == ["default", "encoder_outputs", "pooled_output", "sequence_output"]
    assert result["default"] == result["pooled"]
    assert result["mlm_keys"] == ["default", "encoder_outputs", "mlm_logits", "pooled_output", "sequence_output"]
    mlm = hub_models["pretrainer"](dict(features, masked_lm_positions=np.array([[1, 2]], np.int32)), training=False)
    want = keras.ops.convert_to_numpy(mlm["mlm_logits"])
    assert np.max(np.abs(np.array(result["mlm_logits"]) - want)) <= TOLERANCE
    assert np.max(np.abs(np.array(result["mlm_layer_logits"]) - want)) <= TOLERANCE
    # The encoder's 23 weights plus the masked-LM head's transform (dense, LayerNorm) and output bias.
    assert result["encoder_trainable"] == 23 and result["mlm_trainable"] == 23 + 5


KERAS3_PRELUDE = """
import json, sys
import numpy as np
import keras
import tensorflow as tf
import tensorflow_text  # registers the preprocessing model's ops
encoder_path, preprocess_path, work_dir = sys.argv[1:4]
def report(**values):
    print(json.dumps({k: v if isinstance(v, list) else np.asarray(v).tolist() for k, v in values.items()}))
"""


def test_keras3_tfsm_layers_without_endpoints(hub_models, tmp_path, uncased_vocab):
    """Keras 3: `TFSMLayer(preprocess)` and `TFSMLayer(encoder)` with their default endpoint."""
    result = run_script("""
        preprocessor = keras.layers.TFSMLayer(preprocess_path)
        encoder = keras.layers.TFSMLayer(encoder_path)
        inputs = preprocessor(tf.constant(["Hello world!"]))
        outputs = encoder(inputs)
        report(word_ids=inputs["input_word_ids"], keys=sorted(outputs), pooled=outputs["pooled_output"])
    """, hub_models, tmp_path, prelude=KERAS3_PRELUDE)
    features = packed(["Hello world!"], vocab=uncased_vocab)
    assert result["word_ids"] == features["input_word_ids"].tolist()
    assert result["keys"] == ["default", "pooled_output", "sequence_output"]
    reference = keras_encoder_outputs(hub_models, features)
    assert np.max(np.abs(np.array(result["pooled"]) - reference["pooled_output"])) <= TOLERANCE


def test_keras3_encoder_mlm_as_the_model_page_calls_it(hub_models, tmp_path, uncased_vocab):
    """Keras 3: the encoder page's `encoder.mlm(inputs)` on `tf.saved_model.load(encoder)`, in a fresh process."""
    result = run_script("""
        encoder = tf.saved_model.load(encoder_path)
        preprocessor = tf.saved_model.load(preprocess_path)
        encoder_inputs = preprocessor(tf.constant(["Hello world!"]))
        mlm_inputs = dict(encoder_inputs, masked_lm_positions=tf.constant([[1, 2]]))
        mlm_outputs = encoder.mlm(mlm_inputs)
        report(keys=sorted(mlm_outputs), mlm_logits=mlm_outputs["mlm_logits"], signatures=sorted(encoder.signatures))
    """, hub_models, tmp_path, prelude=KERAS3_PRELUDE)
    assert result["keys"] == ["default", "encoder_outputs", "mlm_logits", "pooled_output", "sequence_output"]
    assert result["signatures"] == ["serving_default"]
    features = packed(["Hello world!"], vocab=uncased_vocab)
    mlm = hub_models["pretrainer"](dict(features, masked_lm_positions=np.array([[1, 2]], np.int32)), training=False)
    assert np.max(np.abs(np.array(result["mlm_logits"]) - keras.ops.convert_to_numpy(mlm["mlm_logits"]))) <= TOLERANCE


def test_encoder_signatures_stay_what_tf_serving_runs(hub_models):
    loaded = tf.saved_model.load(hub_models["encoder_mlm"])
    assert sorted(loaded.signatures) == ["mlm", "serving_default"]
    assert sorted(loaded.signatures["serving_default"].structured_outputs) == [
        "default", "pooled_output", "sequence_output"]
    assert sorted(loaded.signatures["mlm"].structured_outputs) == ["mlm_logits"]
    preprocessing = tf.saved_model.load(hub_models["preprocessing"])
    assert sorted(preprocessing.signatures) == ["serving_default", "text_pair"]
