"""Tests against a real instruction-tuned model (Qwen2.5-Coder-1.5B-Instruct via xllamacpp), run by `make test-real`."""
