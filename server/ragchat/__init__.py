"""ragchat: chat with your documents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ragchat-server")
except PackageNotFoundError:  # a checkout that was never installed (PYTHONPATH=server)
    __version__ = "0+unknown"
