"""Text -> documents and WordPiece ids: the tokenizer, vocab files and learning, corpus readers."""
