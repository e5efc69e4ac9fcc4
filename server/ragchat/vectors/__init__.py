"""Embedding spaces: which model made the stored vectors, where they live, and the zero-downtime switch."""
