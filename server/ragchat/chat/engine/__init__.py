"""The answer engine: the model loop, tools, prompts, the answer rules and the checks (no HTTP, no database)."""
