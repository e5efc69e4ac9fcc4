"""The shared kernel: errors, the request principal and the search contract every domain speaks."""
