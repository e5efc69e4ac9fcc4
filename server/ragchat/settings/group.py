"""The base of every settings group."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Group(BaseModel):
    """A settings group: a plain model (the environment is read once, by `ragchat.settings.Settings`), whose
    fields are named like the environment variables that set them."""

    # a field with another environment name (RAGCHAT_DATA_DIR, an old name) is also set by its own name
    model_config = ConfigDict(populate_by_name=True)
