"""The tf.data training pipeline: TFRecords (or documents) -> batches of the model's features, masks static or
drawn on the fly."""
