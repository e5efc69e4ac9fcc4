"""Logs, metrics and traces: what every layer reports about itself (below the database layer, above nothing)."""
