"""The training step and the multi-step loop, device-side: per-replica loss as in the original, gradient
accumulation, gradients averaged across replicas, then the optimizer (which clips to the global norm before its
update); metrics accumulated on the replicas and read once per loop."""

import contextlib
import dataclasses

import keras
import tensorflow as tf

from bert_tf.compat.tensorflow_internals import strategy_supports_no_merge_call
from bert_tf.errors import InputError
from bert_tf.modeling.dropout import dropout_stream
from bert_tf.training.strategy import split_per_replica


@dataclasses.dataclass(frozen=True)
class LoopResult:
    """What one call of the training loop did.

    Attributes:
        steps: steps the loop ran (fewer than asked when a stop was requested).
        means: each metric's mean over the loop's good steps (over all replicas).
        bad_step: the global step whose loss or gradients were not finite (no update from it on), else None.
        bad_loss: the loss of that step (averaged over replicas).
    """

    steps: int
    means: dict
    bad_step: object = None
    bad_loss: float = None


def micro_batching(replica_batch_size, max_micro_batch_size):
    """(micro-batch size, accumulation steps) for a replica batch of `replica_batch_size` sequences computed at most
    `max_micro_batch_size` at once (None: all at once); an `InputError` when they do not split evenly.

    Example:
    >>> micro_batching(32, 8), micro_batching(4, 8), micro_batching(32, None)
    ((8, 4), (4, 1), (32, 1))
    """
    micro = min(replica_batch_size, max_micro_batch_size or replica_batch_size)
    if replica_batch_size % micro:
        raise InputError(
            f"The per-replica batch of {replica_batch_size} sequences does not split into micro-batches of "
            f"max_micro_batch_size={max_micro_batch_size}: use a divisor of {replica_batch_size}.")
    return micro, replica_batch_size // micro


class Trainer:
    """Runs pre-training steps of a `BertPretrainer` on a `tf.distribute` strategy.

    One step: each replica takes its slice of its host's batch and computes the original per-core loss
    (masked-LM loss normalised by the sum of that slice's weights, plus the NSP mean) and its gradients, over
    `accumulation_steps` micro-batches when the slice is larger than `max_micro_batch_size` (the gradients and
    metrics of the micro-batches are averaged, as if each micro-batch were one more core). The gradients and the
    loss are then averaged across replicas (one all-reduce) and handed to the optimizer, which clips their global
    norm and updates. So one step consumes exactly the global batch, whatever the hardware.

    The original on TPUs summed the per-core gradients after clipping each core's to norm 1.0
    (`CrossShardOptimizer` over `tf.gradients`); averaging and clipping once makes the update independent of the
    replica count (Adam's update is nearly invariant to the gradient's scale, so the two agree up to epsilon and
    the clipping threshold) and equal to the original on one device.

    `train_loop(iterators, num_steps)` is a `tf.function` running up to `num_steps` steps per call (a loop inside
    the graph, the original's `iterations_per_loop`) with no host read per step: each replica adds its step's
    metrics to one packed replica-local accumulator, read (reduced) once when the loop ends. A step whose averaged
    loss or gradients are not finite is not applied, nor is any later step of that loop; the accumulator records
    where it happened. The loop stops early, after a whole step, when `stop_requested` turns true (set from a
    signal handler's thread while the loop runs), when `reads_stop_flag`: with several worker processes each
    step is a collective that all of them must enter, so a flag set on one worker must not end its loop alone;
    the `Controller` then bounds each call by time and agrees on the stop between calls.

    Args:
        strategy: the `tf.distribute.Strategy` the model and optimizer were created under.
        layout: this worker's `WorkerLayout`.
        model: a `BertPretrainer`.
        optimizer: an optimizer built with `aggregate_gradients=False` (or a `LossScaleOptimizer` around one).
        max_micro_batch_size: the most sequences one replica processes at once (None: the whole replica batch).
        jit_compile: compile with XLA: False (none), "gradients" (each replica's forward and backward pass with its
            accumulation loop) or "step" (the whole replica step: gradients, their all-reduce, the skip decision
            and the optimizer's update, as Model Garden compiles the step on GPUs). True means "gradients".
            "step" needs a strategy that updates without `merge_call` inside XLA: one device, or MirroredStrategy /
            MultiWorkerMirroredStrategy on GPUs.
        all_reduce_dtype: the dtype the gradients travel in across replicas ("float32", or "bfloat16" for half
            the bytes); they are averaged, clipped and applied in float32 either way.

    Example:
    >>> layout = worker_layout(strategy)  # doctest: +SKIP
    >>> trainer = Trainer(strategy, layout, model, optimizer, max_micro_batch_size=16)  # doctest: +SKIP
    >>> result = trainer.train(iter(dataset), 100)  # doctest: +SKIP
    >>> result.steps, result.means["loss"], result.bad_step  # doctest: +SKIP
    (100, 6.93, None)
    """

    def __init__(self, strategy, layout, model, optimizer, *, max_micro_batch_size=None, jit_compile=False,
                 all_reduce_dtype="float32"):
        self.strategy = strategy
        self.layout = layout
        self.model = model
        self.optimizer = optimizer
        self.max_micro_batch_size = max_micro_batch_size
        self.use_next_sentence = model.use_next_sentence
        self.loss_scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self.trainable_variables = model.pretraining_variables()
        self.metric_names = metric_names(self.use_next_sentence) + ("grad_norm", "learning_rate")
        # The accumulator's layout: the metric sums over good steps, then these three slots.
        self._good, self._bad, self._bad_loss = range(len(self.metric_names), len(self.metric_names) + 3)
        with strategy.scope():
            optimizer.build(self.trainable_variables)
            self._totals = tf.Variable(tf.zeros(len(self.metric_names) + 3), trainable=False, name="loop_totals",
                                       synchronization=tf.VariableSynchronization.ON_READ,
                                       aggregation=tf.VariableAggregation.SUM)
        # A plain variable on the host's CPU: a signal handler's thread sets it while the loop runs, and the loop's
        # condition reads it before each step. Left unplaced it would land on GPU:0, and that read would wait for
        # GPU:0's stream, i.e. for the step before.
        with tf.device("/device:CPU:0"):
            self.stop_requested = tf.Variable(False, trainable=False, name="stop_requested")
        scope = "gradients" if jit_compile is True else jit_compile
        if scope not in (False, None, "gradients", "step"):
            raise InputError(f"jit_compile={jit_compile!r}: use False, 'gradients' or 'step'.")
        self.all_reduce_dtype = tf.dtypes.as_dtype(all_reduce_dtype)
        self._jit_scope = scope
        self._trace_functions()

    def _trace_functions(self):
        """(Re)creates the step functions: a trace holds the micro-batching it was traced with."""
        scope = self._jit_scope
        # autograph=False: the step's control flow is written as TensorFlow ops (`tf.while_loop`, `tf.cond`), so
        # nothing needs converting, and each process starts its first loop sooner (docs/measurements.md).
        self._compute_gradients = (tf.function(self._gradients, jit_compile=True, autograph=False)
                                   if scope == "gradients" else self._gradients)
        self._step = (tf.function(self._replica_step, jit_compile=True, autograph=False) if scope == "step"
                      else self._replica_step)
        self.train_loop = tf.function(lambda iterators, num_steps: self.run_steps(
            lambda step: tuple(next(iterator) for iterator in _per_host(iterators)), num_steps), autograph=False)

    def use_max_micro_batch_size(self, max_micro_batch_size):
        """Micro-batches of at most `max_micro_batch_size` sequences from the next loop on (each phase its own:
        shorter sequences fit more); a change retraces the step, which the phase's new shapes do anyway."""
        if max_micro_batch_size != self.max_micro_batch_size:
            self.max_micro_batch_size = max_micro_batch_size
            self._trace_functions()

    @property
    def reads_stop_flag(self):
        """Whether the loop reads `stop_requested` before each step: when one process drives every replica."""
        return self.layout.num_workers == 1

    @property
    def step(self):
        """The global step: the optimizer's update count, the run's one step counter (read on the host)."""
        return int(self.optimizer.iterations.numpy())

    def train(self, iterators, num_steps):
        """Runs `train_loop` for up to `num_steps` steps and returns its `LoopResult` (two host reads per call).

        `iterators`: one input iterator per host of `layout.hosts` (a tuple), or the one iterator of a single host.
        """
        start = self.step
        steps, totals = self.train_loop(iterators, tf.constant(num_steps))
        return self.loop_result(start, int(steps.numpy()), totals.numpy())

    def loop_result(self, start_step, steps, totals):
        """Decodes the accumulator read at the end of a loop that started at `start_step`."""
        totals = totals / self.layout.num_replicas
        good = int(round(totals[self._good]))
        means = {name: float(totals[i]) / max(good, 1) for i, name in enumerate(self.metric_names)}
        if totals[self._bad] > 0:
            return LoopResult(steps, means, bad_step=start_step + good, bad_loss=float(totals[self._bad_loss]))
        return LoopResult(steps, means)

    def micro_batching(self, replica_batch_size):
        """(micro-batch size, accumulation steps) for a replica batch of `replica_batch_size` sequences."""
        return micro_batching(replica_batch_size, self.max_micro_batch_size)

    def run_steps(self, next_batch, num_steps):
        """The loop body of `train_loop`, with the batch source as a function of the step index (returning one
        batch per host): TensorFlow ops only, so the whole loop also compiles with XLA when the batches are given
        as a tensor (see the tests). Returns the steps run and the accumulator summed over replicas (the loop's
        one reduction)."""
        self.strategy.run(lambda: self._totals.assign(tf.zeros_like(self._totals)))
        read_stop = self.reads_stop_flag

        # The condition reads only the counter and the stop flag, never a replica's output, so issuing step
        # i + 1 never waits for step i's numbers. The flag is read only while steps remain.
        def more_steps(steps):
            more = steps < num_steps
            if not read_stop:
                return more
            return tf.cond(more, lambda: tf.logical_not(self._stop_flag()), lambda: more)

        def step(steps):
            self.distributed_step(next_batch(steps))
            return (steps + 1,)

        steps, = tf.while_loop(more_steps, step, (tf.constant(0),))
        return steps, self._totals.read_value()

    def _stop_flag(self):
        with tf.device(self.stop_requested.device):  # read where it lives, not where the step's ops run
            return self.stop_requested.read_value()

    def distributed_step(self, host_batches):
        """One optimizer step on the hosts' batches (one per host of `layout.hosts`); its metrics go to each
        replica's accumulator."""
        self.strategy.run(self._step, args=(split_per_replica(self.strategy, self.layout, host_batches),))

    def _replica_step(self, features):
        learning_rate = tf.cast(self.optimizer.learning_rate, tf.float32)
        grads, metrics = self._compute_gradients(features)
        loss = metrics["loss"]
        if self.layout.num_replicas > 1:
            # The loss travels with the gradients, so every replica takes the same skip decision.
            *grads, loss = tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.MEAN, [tf.cast(t, self.all_reduce_dtype) for t in grads + [loss]])
            grads, loss = [tf.cast(g, tf.float32) for g in grads], tf.cast(loss, tf.float32)
        grad_norm = tf.linalg.global_norm(grads)
        if self.loss_scaled:
            grad_norm = grad_norm / tf.cast(self.optimizer.dynamic_scale, tf.float32)
        # A loss-scaled step with overflowing gradients is the LossScaleOptimizer's to skip (it lowers the scale).
        finite = tf.math.is_finite(loss) & (self.loss_scaled or tf.math.is_finite(grad_norm))
        healthy = tf.equal(self._totals[self._bad], 0.0)
        apply = healthy & finite
        self._apply_if(apply, grads)
        metrics = dict(metrics, grad_norm=grad_norm, learning_rate=learning_rate)
        good = tf.cast(apply, tf.float32)
        first_bad = tf.cast(healthy & ~finite, tf.float32)
        self._totals.assign_add(tf.stack(
            [tf.where(apply, metrics[name], 0.0) for name in self.metric_names]
            + [good, 1.0 - good, tf.where(first_bad > 0, loss, 0.0)]))

    def _apply_if(self, condition, grads):
        """Applies `grads` when `condition` (the same on every replica) holds, by one of two branches
        (`update_branch`):

        - "cond", where the strategy updates variables without `merge_call`: the default strategy, and
          MirroredStrategy / MultiWorkerMirroredStrategy inside XLA on GPUs (the "step" jit scope). Each replica
          runs the update under its own `tf.cond`, inside the compiled step.
        - "merge_call" everywhere else: TPUStrategy (its extended class keeps `merge_call`, so a TPU runs this
          branch inside its one compiled program), OneDeviceStrategy, MirroredStrategy on CPUs or outside XLA.
          TensorFlow forbids a `merge_call` (which the optimizer's update makes) under a replica's `tf.cond`, so
          the condition goes to the cross-replica context, where one `tf.cond` on the first replica's value
          calls the update on every replica, as Keras' LossScaleOptimizer does it.
        """
        def apply(grads):
            self.optimizer.apply(grads, self.trainable_variables)

        def cross_replica(strategy, condition, grads):
            tf.cond(strategy.experimental_local_results(condition)[0],
                    lambda: strategy.extended.call_for_each_replica(apply, args=(grads,)), lambda: None)

        if update_branch() == "cond":
            tf.cond(condition, lambda: apply(grads), lambda: None)
        else:
            tf.distribute.get_replica_context().merge_call(cross_replica, args=(condition, grads))

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


def update_branch():
    """How `Trainer` applies an update under the current strategy and graph: "cond" where the strategy updates
    without `merge_call`, else "merge_call" (see `Trainer._apply_if`).

    >>> update_branch()  # the default strategy
    'cond'
    """
    return "cond" if strategy_supports_no_merge_call() else "merge_call"


@contextlib.contextmanager
def replica_updated_counters():
    """A scope for creating an optimizer whose update runs in each replica's compiled step ("step" jit scope on
    GPUs): its step counter is created without the ONLY_FIRST_REPLICA aggregation Keras gives it.

    Keras increments `optimizer.iterations` with a tensor, and TensorFlow updates an ONLY_FIRST_REPLICA variable
    from a replica by broadcasting the first replica's value through `merge_call`, which cannot run inside a
    replica's compiled function (RuntimeError: "`merge_call` called while defining a new graph"). Every replica
    adds the same 1, so each can update its own copy (aggregation NONE) and the copies stay equal.

    Example:
    >>> with replica_updated_counters():
    ...     optimizer = keras.optimizers.SGD()
    >>> optimizer.iterations.value.aggregation
    <VariableAggregationV2.NONE: 0>
    """
    def creator(next_creator, **kwargs):
        if kwargs.get("aggregation") == tf.VariableAggregation.ONLY_FIRST_REPLICA:
            kwargs["aggregation"] = tf.VariableAggregation.NONE
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
        yield


def _per_host(iterators):
    """A tuple of one iterator per host, from such a sequence or from the one iterator of a single host."""
    return tuple(iterators) if isinstance(iterators, (tuple, list)) else (iterators,)


def metric_names(use_next_sentence=True):
    """The original's training metrics (the loss terms and accuracies of `pretraining_losses`)."""
    names = ("loss", "masked_lm_loss", "masked_lm_accuracy")
    return names + (("next_sentence_loss", "next_sentence_accuracy") if use_next_sentence else ())

