"""The one request policy every door applies (ragchat.policy.request)."""
