"""`ragchat user add|list|disable|enable|reset-password|delete`: account admin on the server's machine (direct
database access, so no login: whoever can run this can read the database anyway)."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from uuid import UUID

from ragchat.cli.common import open_accounts, run_async
from ragchat.core.errors import RagchatError
from ragchat.core.principal import Principal
from ragchat.settings import Settings

#: The CLI acts with an admin's rights but is no user: it may change anyone (the last-admin rule still holds).
CLI_ADMIN = Principal(user_id=UUID(int=0), name="cli", is_admin=True)


def read_password(args: argparse.Namespace) -> str:
    if getattr(args, "password_stdin", False):
        return sys.stdin.readline().rstrip("\n")
    if os.environ.get("RAGCHAT_PASSWORD"):
        return os.environ["RAGCHAT_PASSWORD"]
    first = getpass.getpass("new password: ")
    if getpass.getpass("again: ") != first:
        raise RagchatError("the passwords differ")
    return first


async def user_command(settings: Settings, args: argparse.Namespace) -> int:
    async with open_accounts(settings) as accounts:
        if args.action == "list":
            rows = await accounts.list_users()
            if args.json:  # the same JSON as the admin API's GET /api/admin/users
                from ragchat.accounts.schemas import User, UserList

                print(UserList(users=[User.of(u) for u in rows]).model_dump_json(indent=2))
                return 0
            print(f"{'username':<24} {'admin':<6} {'disabled':<9} {'documents':>9}  last seen")
            for u in rows:
                seen = u["last_seen_at"].strftime("%Y-%m-%d %H:%M") if u["last_seen_at"] else "never"
                print(
                    f"{u['username']:<24} {str(u['is_admin']).lower():<6} {str(u['disabled']).lower():<9} "
                    f"{u['documents']:>9}  {seen}"
                )
            if not rows:
                print("no accounts yet: open the web page to create the admin, or `ragchat user add NAME --admin`")
            return 0
        if args.action == "add":
            if await accounts.setup_required() and not args.admin:
                raise RagchatError("the first account must be an admin: add --admin")
            password = read_password(args)
            if await accounts.setup_required():
                result = await accounts.setup(  # the CLI has the database: it needs no setup token
                    args.username, password, ip="cli", user_agent="ragchat CLI", token=accounts.setup_token
                )
                await accounts.logout(result.session_token)
                user = result.user
            else:
                user = await accounts.add_user(args.username, password, is_admin=args.admin)
            print(f"added {user['username']}{' (admin)' if user['is_admin'] else ''}")
            return 0
        user = await accounts.find_user(args.username)
        if args.action in ("disable", "enable"):
            await accounts.update_user(CLI_ADMIN, user["id"], disabled=args.action == "disable")
            print(f"{args.action}d {user['username']}" + (" (sessions ended)" if args.action == "disable" else ""))
        elif args.action == "reset-password":
            await accounts.reset_password(user["id"], read_password(args))
            print(f"password of {user['username']} reset; their sessions ended")
        elif args.action == "delete":
            await accounts.delete_user(CLI_ADMIN, user["id"])
            print(f"deleted {user['username']} and everything they owned")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    u = sub.add_parser("user", help="manage accounts (on the server's machine)")
    actions = u.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="all accounts")
    listing.add_argument("--json", action="store_true", help="print them as JSON (as GET /api/admin/users)")
    add = actions.add_parser("add", help="add an account (password prompted, or RAGCHAT_PASSWORD)")
    add.add_argument("username", help="1-64 letters, digits, . _ - @ (case-insensitive)")
    add.add_argument("--admin", action="store_true", help="make it an admin")
    add.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    for name, text in [
        ("disable", "disable an account (ends its sessions; its tokens stop working)"),
        ("enable", "enable a disabled account"),
        ("reset-password", "set a new password (ends the user's sessions)"),
        ("delete", "delete an account with its documents, threads and collections"),
    ]:
        p = actions.add_parser(name, help=text)
        p.add_argument("username", help="the account")
        if name == "reset-password":
            p.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    u.set_defaults(func=run_async(user_command))
