"""The original pre-training TFRecord format: its feature spec, writer and parser."""
