"""A recipe on a platform (`bert-pretrain --platform`): the compute precision and the micro-batch that fits each
accelerator, for the paper's models, from configs/platforms.yaml (read and checked by
`bert_tf.platforms.platforms_file`).

A platform changes only how a step is computed (mixed precision, micro-batches accumulated into the same global
batch), never what is trained: the global batch, the schedule and the phases stay the recipe's. How the figures
were derived is written in the YAML and in docs/accelerators.md.
"""

from bert_tf.platforms.platforms_file import load_platforms
from bert_tf.training.recipe import RecipeError


def apply_platform(recipe, name):
    """`recipe` with the platform's mixed precision, XLA settings, each phase's micro-batch for the recipe's model
    preset at the phase's length and its eval batch (one that splits over the replicas a process drives there), and
    `platform` set to `name`: the run checks, before its first step, that its replicas are on that kind of device.

    Example:
    >>> from bert_tf.training.recipe import load_recipe
    >>> recipe = apply_platform(load_recipe("bert_large_paper"), "a100_40gb")
    >>> recipe.mixed_precision, recipe.train_batch_size, [p.max_micro_batch_size for p in recipe.phases]
    ('mixed_bfloat16', 256, [128, 16])
    """
    platforms = load_platforms()
    if name not in platforms:
        raise RecipeError(f"--platform={name!r} is unknown: use one of {', '.join(sorted(platforms))}.")
    platform = platforms[name]
    preset = None if recipe.model.bert_config_file else recipe.model.preset
    settings = {"mixed_precision": platform.mixed_precision, "jit_compile": platform.jit_compile,
                "jit_compile_scope": platform.jit_compile_scope, "platform": name}
    recipe = recipe.override({path: value for path, value in settings.items() if value is not None})
    if platform.models:
        recipe = recipe.override({f"phases.{i}.max_micro_batch_size": platform.max_micro_batch_size(
            preset, phase.max_seq_length) for i, phase in enumerate(recipe.phases)})
    if platform.eval_batch_size:
        recipe = recipe.override({"eval.eval_batch_size": platform.eval_batch_size})
    return recipe
