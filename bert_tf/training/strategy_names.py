"""The names `--strategy` and `--all_reduce_implementation` take, without TensorFlow, so that a command's flags and
`--help` load before it (`training/strategy.py` builds the strategies)."""

STRATEGIES = ("tpu", "mirrored", "multi_worker", "one_device", "default")
# How MultiWorkerMirroredStrategy's collectives travel: TensorFlow's CommunicationImplementation of each name.
ALL_REDUCE_IMPLEMENTATIONS = ("auto", "ring", "nccl")
