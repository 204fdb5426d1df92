"""Which ops a SavedModel's serving graph runs, and which of them core TensorFlow does not define.

A stock TF Serving binary knows the ops of core TensorFlow only; a graph with e.g. tensorflow-text ops fails to
load there. `tf.raw_ops` lists exactly the ops compiled into TensorFlow itself, whatever libraries a process has
loaded since, so it is the reference.
"""


import tensorflow as tf

from bert_tf.compat.tensorflow_internals import read_saved_model_proto


def saved_model_ops(export_dir, tags=("serve",)):
    """The set of op types in the MetaGraph with `tags`: its graph and every function of its library."""
    for meta_graph in read_saved_model_proto(export_dir).meta_graphs:
        if set(meta_graph.meta_info_def.tags) == set(tags):
            graph = meta_graph.graph_def
            ops = {node.op for node in graph.node}
            for function in graph.library.function:
                ops.update(node.op for node in function.node_def)
            return ops
    raise ValueError(f"{export_dir} has no MetaGraph with tags {list(tags)}.")


def non_core_ops(export_dir, tags=("serve",)):
    """The op types of the SavedModel that core TensorFlow does not define (sorted); empty for a model a stock
    TF Serving can load.

    Example:
    >>> non_core_ops("exported/encoder/1")  # doctest: +SKIP
    []
    >>> non_core_ops("exported/preprocessing/1")  # doctest: +SKIP
    ['NormalizeUTF8', 'RegexSplitWithOffsets', 'WordpieceTokenizeWithOffsets']
    """
    return sorted(op for op in saved_model_ops(export_dir, tags) if not hasattr(tf.raw_ops, op))
