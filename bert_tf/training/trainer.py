"""The training step and the multi-step loop: per-replica loss as in the original, gradient accumulation, gradients
averaged across replicas, then the optimizer (which clips to the global norm before its update)."""

import keras
import tensorflow as tf

from bert_tf.modeling.dropout import dropout_stream
from bert_tf.training.strategy import split_per_replica

# Variables that only the next-sentence loss trains; without NSP they get no gradient and are left alone.
NSP_ONLY_VARIABLES = ("bert/pooler/", "cls/seq_relationship/")


class Trainer:
    """Runs pre-training steps of a `BertPretrainer` on a `tf.distribute` strategy.

    One step: each replica takes its slice of the worker's batch and computes the original per-core loss
    (masked-LM loss normalised by the sum of that slice's weights, plus the NSP mean) and its gradients, over
    `accumulation_steps` micro-batches when the slice is larger than `max_micro_batch_size` (the gradients and
    metrics of the micro-batches are averaged, as if each micro-batch were one more core). The gradients are then
    averaged across replicas (one all-reduce) and handed to the optimizer, which clips their global norm and
    updates. So one step consumes exactly the global batch, whatever the hardware.

    The original on TPUs summed the per-core gradients after clipping each core's to norm 1.0
    (`CrossShardOptimizer` over `tf.gradients`); averaging and clipping once makes the update independent of the
    replica count (Adam's update is nearly invariant to the gradient's scale, so the two agree up to epsilon and
    the clipping threshold) and equal to the original on one device.

    `train_loop(iterator, num_steps)` is a `tf.function` that runs `num_steps` steps per call (a `tf.range` loop
    inside the graph, the original's `iterations_per_loop`), stops early at a non-finite loss, and returns the
    sum of each metric over the steps it ran.

    Args:
        strategy: the `tf.distribute.Strategy` the model and optimizer were created under.
        layout: this worker's `WorkerLayout`.
        model: a `BertPretrainer`.
        optimizer: an optimizer built with `aggregate_gradients=False` (or a `LossScaleOptimizer` around one).
        max_micro_batch_size: the most sequences one replica processes at once (None: the whole replica batch).
        jit_compile: compile each replica's forward and backward pass (with its accumulation loop) with XLA.

    Example:
    >>> trainer = Trainer(strategy, worker_layout(strategy), model, optimizer, max_micro_batch_size=16)
    >>> sums, steps, finite, bad_step = trainer.train_loop(iter(dataset), tf.constant(100))
    """

    def __init__(self, strategy, layout, model, optimizer, max_micro_batch_size=None, jit_compile=False):
        self.strategy = strategy
        self.layout = layout
        self.model = model
        self.optimizer = optimizer
        self.max_micro_batch_size = max_micro_batch_size
        self.use_next_sentence = model.use_next_sentence
        self.loss_scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self.trainable_variables = [
            v for v in model.trainable_variables
            if self.use_next_sentence or not v.path.startswith(NSP_ONLY_VARIABLES)]
        with strategy.scope():
            optimizer.build(self.trainable_variables)
        self.metric_names = metric_names(self.use_next_sentence) + ("grad_norm", "learning_rate")
        self._compute_gradients = (tf.function(self._gradients, jit_compile=True) if jit_compile
                                   else self._gradients)
        self.train_loop = tf.function(
            lambda iterator, num_steps: self.run_steps(lambda step: next(iterator), num_steps))

    def micro_batching(self, replica_batch_size):
        """(micro-batch size, accumulation steps) for a replica batch of `replica_batch_size` sequences."""
        micro = min(replica_batch_size, self.max_micro_batch_size or replica_batch_size)
        if replica_batch_size % micro:
            raise ValueError(
                f"The per-replica batch of {replica_batch_size} sequences does not split into micro-batches of "
                f"max_micro_batch_size={self.max_micro_batch_size}: use a divisor of {replica_batch_size}.")
        return micro, replica_batch_size // micro

    def run_steps(self, next_batch, num_steps):
        """The loop body of `train_loop`, with the batch source as a function of the step index: TensorFlow ops
        only, so the whole loop also compiles with XLA when the batches are given as a tensor (see the tests)."""
        sums = {name: tf.constant(0.0) for name in self.metric_names}
        steps_run = tf.constant(0)
        finite = tf.constant(True)
        bad_step = tf.constant(-1, tf.int64)
        for i in tf.range(num_steps):
            step = tf.cast(self.optimizer.iterations, tf.int64)
            metrics = self.distributed_step(next_batch(i))
            sums = {name: sums[name] + metrics[name] for name in self.metric_names}
            steps_run += 1
            if not tf.math.is_finite(metrics["loss"]):
                finite = tf.constant(False)
                bad_step = step
                break
        return sums, steps_run, finite, bad_step

    def distributed_step(self, batch):
        """One optimizer step on a worker's batch; the metrics averaged over all replicas."""
        per_replica = self.strategy.run(self._replica_step, args=(split_per_replica(
            self.strategy, self.layout, batch),))
        return {name: self.strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)
                for name, value in per_replica.items()}

    def _replica_step(self, features):
        learning_rate = tf.cast(self.optimizer.learning_rate, tf.float32)
        grads, metrics = self._compute_gradients(features)
        if self.layout.num_replicas > 1:
            grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        grad_norm = tf.linalg.global_norm(grads)
        if self.loss_scaled:
            grad_norm = grad_norm / tf.cast(self.optimizer.dynamic_scale, tf.float32)
        self.optimizer.apply(grads, self.trainable_variables)
        return dict(metrics, grad_norm=grad_norm, learning_rate=learning_rate)

    def _gradients(self, features):
        batch_size = features["input_word_ids"].shape[0]
        micro, accumulation = self.micro_batching(batch_size)
        if accumulation == 1:
            return self._micro_batch_gradients(features)
        micro_batches = {k: tf.reshape(v, [accumulation, micro] + v.shape[1:].as_list())
                         for k, v in features.items()}

        def body(i, grads, metrics):
            new_grads, new_metrics = self._micro_batch_gradients({k: v[i] for k, v in micro_batches.items()})
            return (i + 1, [a + g for a, g in zip(grads, new_grads)],
                    {k: metrics[k] + new_metrics[k] for k in metrics})

        zeros = ([tf.zeros(v.shape, tf.float32) for v in self.trainable_variables],
                 {k: tf.constant(0.0) for k in metric_names(self.use_next_sentence)})
        _, grads, metrics = tf.while_loop(lambda i, *_: i < accumulation, body, (tf.constant(0),) + zeros)
        return ([g / accumulation for g in grads], {k: v / accumulation for k, v in metrics.items()})

    def _micro_batch_gradients(self, features):
        replica = tf.distribute.get_replica_context()
        with tf.GradientTape() as tape, dropout_stream(replica.replica_id_in_sync_group,
                                                       replica.num_replicas_in_sync):
            outputs = self.model(features, training=True)
            losses = self.model.compute_losses(outputs, features)
            loss = self.optimizer.scale_loss(losses["loss"]) if self.loss_scaled else losses["loss"]
        grads = tape.gradient(loss, self.trainable_variables)
        missing = [v.path for v, g in zip(self.trainable_variables, grads) if g is None]
        if missing:
            raise ValueError(f"No gradient reaches {missing}: the pre-training loss does not depend on them.")
        grads = [tf.convert_to_tensor(g) for g in grads]  # embedding gradients arrive as IndexedSlices
        return grads, {name: tf.cast(losses[name], tf.float32) for name in metric_names(self.use_next_sentence)}


def metric_names(use_next_sentence=True):
    """The original's training metrics (the loss terms and accuracies of `pretraining_losses`)."""
    names = ("loss", "masked_lm_loss", "masked_lm_accuracy")
    return names + (("next_sentence_loss", "next_sentence_accuracy") if use_next_sentence else ())

