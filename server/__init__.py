"""ragchat: chat with your documents."""

__version__ = "0.4.0"
