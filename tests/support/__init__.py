"""Test helpers shared across tiers: services built from real parts, accounts, chat SSE, corpora, hostile files."""
