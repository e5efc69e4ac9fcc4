"""Response pieces shared by several domains' routes."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import BaseModel


class Person(BaseModel):
    """A user as others see them."""

    id: UUID
    username: str

    @classmethod
    def of(cls, user_id: Any, username: str | None) -> Person:
        return cls(id=user_id, username=username or "")
