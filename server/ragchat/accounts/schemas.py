"""Request and response models of the auth, token and admin routes (docs/ACCOUNTS.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, Field

from ragchat.accounts.passwords import MAX_LENGTH, MIN_LENGTH
from ragchat.core.schemas import Flag, Person

#: What the server accepts (it strips the spaces around a username); the schema says the same.
USERNAME = r"^\s*[A-Za-z0-9._@-]{1,64}\s*$"
NO_NUL = r"^[^\x00]*$"


def new_password(description: str = "the new password") -> Any:
    return Field(min_length=MIN_LENGTH, max_length=MAX_LENGTH, pattern=NO_NUL, description=description)


class Credentials(BaseModel):
    """A login: any strings (a wrong one is a 401, whatever its shape)."""

    username: str = Field(max_length=200)
    password: str = Field(max_length=4096)


class NewAccount(BaseModel):
    """The first account (setup): the username's characters and the password's length are checked."""

    username: str = Field(pattern=USERNAME, description="1-64 letters, digits, '.', '_', '-' or '@'")
    password: str = new_password("the password")
    setup_token: str | None = Field(
        default=None,
        max_length=256,
        description="the server's setup token (the `?setup_token=` of the link `ragchat serve` printed, or "
        "RAGCHAT_SETUP_TOKEN): needed when the server listens beyond loopback",
    )


class PasswordChange(BaseModel):
    current_password: str = Field(max_length=4096)
    new_password: str = new_password()


class NewToken(BaseModel):
    name: str = Field(max_length=1000)
    expires_in_days: int | None = Field(
        default=None, ge=1, le=3650, description="the token stops working this many days from now"
    )
    expires_at: AwareDatetime | None = Field(
        default=None, description="or: the moment it stops working (at most 10 years away); neither: never"
    )


class NewUser(BaseModel):
    username: str = Field(pattern=USERNAME, description="1-64 letters, digits, '.', '_', '-' or '@'")
    password: str = new_password("the password")
    is_admin: Flag = False


class UserPatch(BaseModel):
    disabled: Flag | None = None
    is_admin: Flag | None = None


class PasswordReset(BaseModel):
    password: str = new_password()


class User(BaseModel):
    id: UUID
    username: str
    is_admin: bool
    disabled: bool
    created_at: datetime
    last_seen_at: datetime | None = Field(default=None, description="last request (admin listing only)")
    documents: int | None = Field(default=None, description="documents owned (admin listing only)")

    @classmethod
    def of(cls, row: dict[str, Any]) -> User:
        return cls(**{k: row[k] for k in cls.model_fields if k in row})


class UserList(BaseModel):
    users: list[User]


class Directory(BaseModel):
    """Active users, to choose whom to share a collection with."""

    users: list[Person]


class SessionInfo(BaseModel):
    auth: Literal["on", "off"]
    setup_required: bool = Field(description="no account exists yet: the first visitor creates the admin")
    user: User | None = Field(description="who is signed in (null: nobody)")


class SignedIn(BaseModel):
    """The session cookie is set on this response."""

    user: User


class Token(BaseModel):
    id: UUID
    name: str
    prefix: str = Field(description="the token's first characters, to tell tokens apart")
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None = Field(default=None, description="null: the token never expires")
    expired: bool = Field(default=False, description="past its expiry: refused with 401 until revoked")

    @classmethod
    def of(cls, row: dict[str, Any]) -> Token:
        return cls(**{k: row[k] for k in cls.model_fields if k in row})


class CreatedToken(Token):
    token: str = Field(description="the secret: shown in this response only, the server keeps its hash")


class TokenList(BaseModel):
    tokens: list[Token]
