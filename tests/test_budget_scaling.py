"""A recipe scaled to a budget (`--num_train_steps`): the paper's recipes keep their phases in proportion, and
small_fast keeps enough steps at its final length to learn it (`min_num_steps`, docs/convergence.md "A budget that
ends strong": in proportion, 1,500 steps left 150 at 128 tokens and held-out accuracy there ended at 0.205; the
rule's 750 ended at 0.332)."""

import pytest

from bert_tf.training.recipe import RecipeError, load_recipe, recipe_names, scaled_phase_steps


def scaled(name, total):
    return [p.num_steps for p in load_recipe(name).override({"num_train_steps": total, "num_warmup_steps": 1}).phases]


@pytest.mark.parametrize("total, steps", [(1500, [750, 750]), (3000, [1500, 1500]), (5000, [3000, 2000]),
                                          (10_000, [8000, 2000]), (20_000, [18_000, 2000]), (40_000, [36_000, 4000])])
def test_small_fast_scaled_to_a_budget_keeps_2000_steps_or_half_the_run_at_its_final_length(total, steps):
    assert scaled("small_fast", total) == steps


@pytest.mark.parametrize("name", ["bert_base_paper", "bert_large_paper"])
def test_the_paper_recipes_scale_in_proportion_as_the_original(name):
    recipe = load_recipe(name)
    assert [p.num_steps for p in recipe.phases] == [900_000, 100_000]
    assert all(p.min_num_steps is None for p in recipe.phases)
    for total in (10, 1500, 3000, 20_000, 1_000_000):
        assert scaled(name, total) == [total * 9 // 10, total - total * 9 // 10]


def test_only_small_fast_sets_a_minimum():
    assert {name for name in recipe_names()
            if any(p.min_num_steps for p in load_recipe(name).phases)} == {"small_fast"}


def test_the_rule_with_three_phases_and_too_small_a_run():
    # The other phases share what the kept phase leaves, in proportion; a minimum is never above half the run.
    assert scaled_phase_steps([600, 300, 100], 1000, [None, None, 500]) == [333, 167, 500]
    assert scaled_phase_steps([600, 300, 100], 10_000, [None, None, 500]) == [6000, 3000, 1000]
    assert scaled_phase_steps([900, 100], 3, [None, 1000]) == [2, 1]
    with pytest.raises(RecipeError, match=r"num_train_steps=4 cannot give the phases' min_num_steps "
                                          r"\(\[2, 2, None\]\) and one step to every other phase"):
        scaled_phase_steps([1, 1, 8], 4, [2, 2, None])
    with pytest.raises(RecipeError, match=r"min_num_steps=0 must be a positive integer or null"):
        load_recipe("small_fast").override({"phases.1.min_num_steps": 0})
