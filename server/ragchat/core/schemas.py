"""Response pieces shared by several domains' routes."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from pydantic import BaseModel, BeforeValidator


class Person(BaseModel):
    """A user as others see them."""

    id: UUID
    username: str

    @classmethod
    def of(cls, user_id: Any, username: str | None) -> Person:
        return cls(id=user_id, username=username or "")


def _only_bool(value: Any) -> Any:
    if value is not None and not isinstance(value, bool):
        raise ValueError("must be true or false")  # not 0/1 or "yes": Litestar validates in lax mode
    return value


#: A JSON boolean, strictly (pydantic's StrictBool is overridden by Litestar's lax `model_validate`).
Flag = Annotated[bool, BeforeValidator(_only_bool)]
