"""The recipes in configs/pretrain/ as data: the paper's numbers, validation errors that name the field, overrides."""

import dataclasses

import pytest

from bert_tf.errors import InputError
from bert_tf.training.pretraining import resolve_bert_config
from bert_tf.training.recipe import InputSet, Recipe, RecipeError, check_ready, load_recipe


@pytest.mark.parametrize("name, hidden, layers", [("bert_base_paper", 768, 12), ("bert_large_paper", 1024, 24)])
def test_paper_recipes_state_the_original_run(name, hidden, layers):
    recipe = load_recipe(name)
    assert (recipe.train_batch_size, recipe.num_train_steps, recipe.num_warmup_steps) == (256, 1_000_000, 10_000)
    assert recipe.learning_rate == 1e-4
    opt = recipe.optimizer
    assert (opt.name, opt.beta_1, opt.beta_2, opt.epsilon, opt.weight_decay_rate, opt.clip_norm) == (
        "adamw", 0.9, 0.999, 1e-6, 0.01, 1.0)
    assert opt.exclude_from_weight_decay == ("LayerNorm", "layer_norm", "bias")
    assert [(p.num_steps, p.max_seq_length, p.max_predictions_per_seq) for p in recipe.phases] == [
        (900_000, 128, 20), (100_000, 512, 80)]
    assert recipe.phase_ends == [900_000, 1_000_000]
    config = resolve_bert_config(recipe)
    assert (config.hidden_size, config.num_hidden_layers, config.vocab_size) == (hidden, layers, 30522)
    assert config.hidden_dropout_prob == config.attention_probs_dropout_prob == 0.1
    assert (recipe.mixed_precision, recipe.jit_compile, recipe.use_next_sentence,
            recipe.dynamic_masking.enabled) == ("float32", False, True, False)


def test_demo_recipe_takes_vocab_size_from_the_vocab(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"t{i}" for i in range(1000)) + "\n")
    recipe = load_recipe("demo_cpu").override({"vocab_file": str(vocab)})
    config = resolve_bert_config(recipe)
    assert (config.hidden_size, config.num_hidden_layers, config.vocab_size) == (128, 2, 1000)


def test_overrides_per_phase_and_rescaled_steps():
    recipe = load_recipe("bert_base_paper").override({
        "num_train_steps": 1000, "num_warmup_steps": 100, "phases.input_file": ["a/*.tfrecord", "b/*.tfrecord"],
        "phases.max_predictions_per_seq": [20, 76], "train_batch_size": 64, "learning_rate": 2e-4,
        "optimizer.name": "lamb", "mixed_precision": "mixed_bfloat16", "jit_compile": True,
        "use_next_sentence": False, "dynamic_masking.enabled": True, "eval.input_file": "heldout.tfrecord"})
    assert [(p.num_steps, p.input_file, p.max_predictions_per_seq) for p in recipe.phases] == [
        (900, "a/*.tfrecord", 20), (100, "b/*.tfrecord", 76)]
    assert (recipe.train_batch_size, recipe.learning_rate, recipe.optimizer.name, recipe.iterations_per_loop) == (
        64, 2e-4, "lamb", 1000)
    assert recipe.mixed_precision == "mixed_bfloat16" and recipe.jit_compile and not recipe.use_next_sentence
    assert recipe.dynamic_masking.enabled and recipe.eval.input_file == "heldout.tfrecord"
    with pytest.raises(RecipeError, match=r"dynamic_masking needs the vocab"):
        check_ready(recipe)


@pytest.mark.parametrize("overrides, message", [
    ({"phases.input_file": ["only-one.tfrecord"]}, r"--set phases.input_file= gave 1 value\(s\) but recipe "
                                                   r"'bert_base_paper' has 2 phases \(seq128, seq512\)"),
    ({"num_train_steps": 5000}, r"num_train_steps=5000 is below the recipe's num_warmup_steps=10000"),
    ({"learning_rate": -1.0}, r"learning_rate=-1.0 must be a positive number"),
    ({"mixed_precision": "fp8"}, r"mixed_precision='fp8' must be one of float32, mixed_bfloat16, mixed_float16"),
    ({"train_batch_size": 0}, r"train_batch_size=0 must be a positive integer"),
    ({"phases.max_seq_length": [128, 64]}, r"phases\[1\].max_predictions_per_seq=80 must not exceed max_seq_length=64"),
])
def test_wrong_values_name_the_field(overrides, message):
    with pytest.raises(RecipeError, match=message):
        load_recipe("bert_base_paper").override(overrides)


def test_wrong_yaml_names_the_field(tmp_path):
    base = load_recipe("demo_cpu").to_dict()
    cases = [
        (dict(base, optimiser={"name": "adamw"}), r"demo_cpu.yaml: unknown field\(s\) \['optimiser'\]"),
        (dict(base, optimizer=dict(base["optimizer"], name="sgd")),
         r"optimizer.name='sgd' must be one of adamw, lamb"),
        (dict(base, num_train_steps=1000),
         rf"num_train_steps=1000 must equal the sum of the phases' num_steps "
         rf"\({sum(phase['num_steps'] for phase in base['phases'])}\)"),
        (dict(base, phases=[dict(base["phases"][0], max_seq_lenght=128)]),
         r"phases\[0\]: unknown field\(s\) \['max_seq_lenght'\]"),
        (dict(base, model={"preset": "tiny", "hidden_sise": 8}),
         r"model: unknown field\(s\) \['hidden_sise'\]; known fields are \[.*'hidden_size'.*'preset'"),
        (dict(base, model={"preset": "tiny", "bert_config_file": "x.json"}), r"give exactly one of preset"),
    ]
    import yaml
    for values, message in cases:
        path = tmp_path / "demo_cpu.yaml"
        path.write_text(yaml.safe_dump(values))
        with pytest.raises(RecipeError, match=message):
            load_recipe(str(path))
    with pytest.raises(RecipeError, match=r"No recipe file 'bert_huge': pass a YAML path or one of \[.*'demo_cpu'"):
        load_recipe("bert_huge")


def test_to_dict_round_trip():
    recipe = load_recipe("bert_large_paper")
    assert Recipe.from_dict(recipe.to_dict()) == recipe
    assert dataclasses.replace(recipe, seed=1) != recipe


def write_yaml(tmp_path, text):
    path = tmp_path / "custom.yaml"
    base = load_recipe("demo_cpu").to_dict()
    import yaml
    path.write_text(yaml.safe_dump(base) + text)
    return str(path)


@pytest.mark.parametrize("yaml_text, message", [
    ("optimizer: {beta_1: '0.9'}\n", r"optimizer.beta_1='0.9' must be a finite number: write it without quotes "
                                     r"\(beta_1: 0.9\)"),
    ("model: {preset: tiny, layer_norm_eps: tiny}\n", r"model.layer_norm_eps='tiny' must be a finite number"),
    ("model: {preset: tiny, layer_norm_eps: '1e-7'}\n", r"model.layer_norm_eps='1e-7' must be a finite number or null: "
                                                        r"write it without quotes"),
    ("train_batch_size: 32.5\n", r"train_batch_size=32.5 must be an integer"),
    ("jit_compile: 'no'\n", r"jit_compile='no' must be true or false"),
    ("learning_rate: .nan\n", r"learning_rate=nan must be a finite number"),
    ("eval: {eval_batch_size: 0}\n", r"eval.eval_batch_size=0 must be a positive integer"),
    ("dynamic_masking: {masked_lm_prob: 1.5}\n", r"dynamic_masking.masked_lm_prob=1.5 must lie in \(0, 1\)"),
])
def test_type_and_range_errors_are_one_line_naming_the_field(tmp_path, yaml_text, message):
    with pytest.raises(RecipeError, match=message) as error:
        load_recipe(write_yaml(tmp_path, yaml_text))
    assert "\n" not in str(error.value) and isinstance(error.value, InputError)


def test_yaml_exponents_without_a_dot_are_numbers(tmp_path):
    # PyYAML (YAML 1.1) reads 1e-4 as a string; recipes read it as YAML 1.2 does.
    recipe = load_recipe(write_yaml(tmp_path, "learning_rate: 1e-4\noptimizer: {epsilon: 1e-6}\n"))
    assert recipe.learning_rate == 1e-4 and recipe.optimizer.epsilon == 1e-6


def test_dotted_overrides_reach_every_section():
    recipe = load_recipe("bert_base_paper").override({
        "optimizer.beta_1": "0.95", "model.hidden_dropout_prob": 0.0, "eval.max_eval_steps": "7",
        "phases.1.max_seq_length": 256, "dynamic_masking.do_whole_word_mask": "true", "shuffle_buffer": "1000",
        "phases.input_file": ["a-*.tfrecord", "1e-4"]})
    assert recipe.optimizer.beta_1 == 0.95 and recipe.model.overrides["hidden_dropout_prob"] == 0.0
    assert recipe.eval.max_eval_steps == 7 and recipe.dynamic_masking.do_whole_word_mask is True
    assert [p.max_seq_length for p in recipe.phases] == [128, 256] and recipe.shuffle_buffer == 1000
    assert [p.input_file for p in recipe.phases] == ["a-*.tfrecord", "1e-4"]  # file names stay strings
    with pytest.raises(RecipeError, match=r"Unknown override 'optimizer.beta1': use a recipe field"):
        load_recipe("bert_base_paper").override({"optimizer.beta1": 0.9})
    with pytest.raises(RecipeError, match=r"optimizer.beta_1=1.5 must lie in \[0, 1\)"):
        load_recipe("bert_base_paper").override({"optimizer.beta_1": "1.5"})


def test_mixed_inputs_round_trip_through_yaml_overrides_and_set(tmp_path):
    assert load_recipe("continue_domain").phases[0].mixed_inputs == ()  # no general corpus ships: none by default
    recipe = load_recipe(write_yaml(tmp_path, "phases:\n  - {name: seq32, num_steps: 2500, max_seq_length: 32, "
                                              "max_predictions_per_seq: 5, input_file: domain-*.tfrecord,\n     "
                                              "mixed_inputs: [{input_file: 'general-*.tfrecord', share: 0.05}]}\n"))
    phase = recipe.phases[0]
    assert phase.mixed_inputs == (InputSet("general-*.tfrecord", 0.05),)
    assert phase.input_sets == (("domain-*.tfrecord", 0.95), ("general-*.tfrecord", 0.05))
    assert Recipe.from_dict(recipe.to_dict()) == recipe
    import yaml
    assert yaml.safe_load(yaml.safe_dump(recipe.to_dict()))["phases"][0]["mixed_inputs"] == [
        {"input_file": "general-*.tfrecord", "share": 0.05}]  # what a run writes to its recipe.yaml
    # --set (a YAML string), a dotted path's value, one list of sets per phase: the same recipe.
    two = "[{input_file: general-*.tfrecord, share: 0.2}, {input_file: books.tfrecord, share: 0.1}]"
    by_set = recipe.override({"phases.0.mixed_inputs": two})
    assert by_set.phases[0].mixed_inputs == (InputSet("general-*.tfrecord", 0.2), InputSet("books.tfrecord", 0.1))
    values = [{"input_file": "general-*.tfrecord", "share": 0.2}, {"input_file": "books.tfrecord", "share": 0.1}]
    assert recipe.override({"phases.mixed_inputs": values}) == by_set  # a one-phase recipe: the phase's sets
    assert recipe.override({"phases.mixed_inputs": [values]}) == by_set
    assert recipe.override({"phases.0.mixed_inputs": "[]"}).phases[0].mixed_inputs == ()
    assert by_set.override({"num_train_steps": 600, "num_warmup_steps": 6}).phases[0].mixed_inputs == (
        by_set.phases[0].mixed_inputs)  # kept when the phases are rescaled


@pytest.mark.parametrize("value, message", [
    ("[{input_file: a, share: 0.1}, {input_file: b, shares: 0.1}]",
     r"^recipe 'demo_cpu': phases\[0\]: mixed_inputs\[1\]: unknown field\(s\) \['shares'\]; known fields are "
     r"\['input_file', 'share'\]\.$"),
    ("[{input_file: a, share: 1.5}]", r"^recipe 'demo_cpu': phases\[0\]: mixed_inputs\[0\]: share=1.5 must lie in "
                                      r"\(0, 1\): the fraction of the phase's records read from this input_file\.$"),
    ("[{input_file: a, share: 0}]", r"mixed_inputs\[0\]: share=0 must lie in \(0, 1\)"),
    ("[{input_file: a, share: 0.6}, {input_file: b, share: 0.4}]",
     r"^recipe 'demo_cpu': phases\[0\]\.mixed_inputs=\(InputSet\(input_file='a', share=0\.6\), InputSet\("
     r"input_file='b', share=0\.4\)\) must have shares that sum below 1 \(they sum to 1; the phase's own "
     r"input_file reads the rest, 1 - sum\): lower them\.$"),
    ("[{input_file: a, share: '0.05'}]", r"^recipe 'demo_cpu': phases\[0\]: mixed_inputs\[0\]: share='0.05' must be "
                                         r"a finite number: write it without quotes \(share: 0.05\)\.$"),
    ("general-*.tfrecord", r"^recipe 'demo_cpu': phases\[0\]\.mixed_inputs='general-\*\.tfrecord' must be a list of "
                           r"mappings, each with the fields input_file, share\.$"),
    ("[general-*.tfrecord]", r"^recipe 'demo_cpu': phases\[0\]: mixed_inputs\[0\] must be a mapping of fields, got "
                             r"'general-\*\.tfrecord'\.$"),
])
def test_mixed_inputs_errors_name_the_item_and_field(value, message):
    with pytest.raises(RecipeError, match=message):
        load_recipe("demo_cpu").override({"phases.0.mixed_inputs": value})


def test_phase_fields_set_for_every_phase_need_one_value_per_phase():
    # Given by --set (num_steps and mixed_inputs have no flag of their own), the message names the --set.
    with pytest.raises(RecipeError, match=r"^--set phases\.num_steps= gave 3 value\(s\) but recipe "
                                          r"'bert_base_paper' has 2 phases \(seq128, seq512\): give a list of values"):
        load_recipe("bert_base_paper").override({"phases.num_steps": "[1, 2, 3]"})
    with pytest.raises(RecipeError, match=r"^--set phases\.mixed_inputs= gave 1 list\(s\) but recipe "
                                          r"'bert_base_paper' has 2 phases \(seq128, seq512\): give a list of lists"):
        load_recipe("bert_base_paper").override({"phases.mixed_inputs": "[{input_file: a, share: 0.1}]"})
    both = load_recipe("bert_base_paper").override({"phases.mixed_inputs": "[[{input_file: a, share: 0.1}], []]"})
    assert [p.mixed_inputs for p in both.phases] == [(InputSet("a", 0.1),), ()]


def test_mixed_inputs_errors_in_a_file_name_the_file(tmp_path):
    path = write_yaml(tmp_path, "phases:\n  - {name: p, num_steps: 2500, max_seq_length: 32, "
                                "max_predictions_per_seq: 5,\n     mixed_inputs: [{input_file: a, share: 0.1}, "
                                "{input_file: b, share: 0.1, weight: 2}]}\n")
    with pytest.raises(RecipeError, match=r"^custom.yaml: phases\[0\]: mixed_inputs\[1\]: unknown field\(s\) "
                                          r"\['weight'\]; known fields are \['input_file', 'share'\]\.$"):
        load_recipe(path)
