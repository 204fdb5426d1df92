"""Documents -> training instances: the original create_pretraining_data algorithm, sharded and streaming."""
