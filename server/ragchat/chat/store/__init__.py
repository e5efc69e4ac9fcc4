"""What chat keeps: threads, messages, feedback and thread settings, and the audit of answers (SQL only)."""
