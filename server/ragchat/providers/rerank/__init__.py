"""Cross-encoder rerank servers over HTTP (TEI, Infinity, llama.cpp, Cohere/Jina-compatible)."""
