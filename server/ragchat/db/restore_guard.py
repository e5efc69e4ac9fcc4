"""What `ragchat restore` trusts of a backup's database dump: nothing (issue 43; used by db/backup.py).

A dump is SQL its author wrote. A checksum or a signature says who wrote it, not what it does, so a restore
also limits what it can do, in three layers:

1. **The table of contents** (`pg_restore --list`) may name only ragchat's own objects: those a clean database
   migrated to the backup's schema version holds (the *reference*, built for each restore). Anything else (an
   unknown function, a view or materialized view, a language, an extension other than vector, an event
   trigger...) is refused by name before anything is restored. `vector` is created by ragchat, not the dump.
2. **A role without rights**: `pg_restore` logs in as a throwaway LOGIN role (random password, no superuser,
   no CREATEDB/CREATEROLE, `CREATE` on schema `public` only) into a new, separate database. It cannot run
   `COPY ... TO PROGRAM`, read or write the server's files, or create untrusted-language functions, whatever the
   dump's SQL says (`SET ROLE` would not do: a superuser session can `RESET ROLE`).
3. **The result is compared** with the reference: every function (its whole definition), trigger, column
   (type, default, generated expression), constraint, view, rule, policy, schema, extension, language... must be
   the reference's, before anything runs as the connecting user (migrations, the app). Then the row counts.

Only then is the new database migrated and swapped in for the target (rename), so a refused or failed restore
leaves the target as it was (issue 44).
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ragchat.core.errors import RagchatError
from ragchat.db.migrate import MIGRATIONS_DIR, migrate, migration_files


class BackupError(RagchatError):
    """A backup that is refused, or a backup or restore that failed (nothing was replaced)."""

    status_code = 400
    code = "backup_error"


# pg_dump's entry types (longest first when matched), so that a refusal names what it saw
_DESCS = sorted(
    """ACCESS METHOD|ACL|AGGREGATE|BLOB|BLOB METADATA|BLOBS|CAST|CHECK CONSTRAINT|COLLATION|COMMENT|CONSTRAINT|
    CONVERSION|DATABASE|DATABASE PROPERTIES|DEFAULT|DEFAULT ACL|DOMAIN|ENCODING|EVENT TRIGGER|EXTENSION|
    FK CONSTRAINT|FOREIGN DATA WRAPPER|FOREIGN SERVER|FOREIGN TABLE|FUNCTION|INDEX|INDEX ATTACH|LARGE OBJECT|
    MATERIALIZED VIEW|MATERIALIZED VIEW DATA|OPERATOR|OPERATOR CLASS|OPERATOR FAMILY|POLICY|PROCEDURAL LANGUAGE|
    PROCEDURE|PUBLICATION|PUBLICATION TABLE|PUBLICATION TABLES IN SCHEMA|ROW SECURITY|RULE|SCHEMA|SEARCHPATH|
    SECURITY LABEL|SEQUENCE|SEQUENCE OWNED BY|SEQUENCE SET|SERVER|SHELL TYPE|STATISTICS|STATISTICS DATA|STDSTRINGS|
    SUBSCRIPTION|SUBSCRIPTION TABLE|TABLE|TABLE ATTACH|TABLE DATA|TEXT SEARCH CONFIGURATION|TEXT SEARCH DICTIONARY|
    TEXT SEARCH PARSER|TEXT SEARCH TEMPLATE|TRANSFORM|TRIGGER|TYPE|USER MAPPING|VIEW""".replace("\n", "")
    .replace("    ", "")
    .split("|"),
    key=len,
    reverse=True,
)
_ENTRY = re.compile(r"^(\d+); (\d+) (\d+) (.*)$")
#: entries ragchat does itself (vector is created before the restore; privileges and owners are not restored)
_SKIPPED = {"EXTENSION - vector", "COMMENT - EXTENSION vector", "SCHEMA - public", "COMMENT - SCHEMA public"}
_SKIPPED_TYPES = {"ACL", "DEFAULT ACL", "ENCODING", "STDSTRINGS", "SEARCHPATH"}
#: must be one of the reference's entries (same type, schema and name; data entries as their object)
_KEYED = {"TABLE", "FUNCTION", "TRIGGER", "SEQUENCE", "COMMENT"}
_AS_OBJECT = {"TABLE DATA": "TABLE", "SEQUENCE SET": "SEQUENCE", "SEQUENCE OWNED BY": "SEQUENCE"}
#: allowed on one of the reference's tables (the first word of the name); indexes: any in public (an embedding
#: space's index is named after the space; an index can only call immutable functions, which are checked after)
_ON_TABLE = {"CONSTRAINT", "FK CONSTRAINT", "CHECK CONSTRAINT", "DEFAULT"}


@dataclass(frozen=True)
class TocEntry:
    line: str
    desc: str
    schema: str
    name: str  # without the owner

    @property
    def key(self) -> str:
        return f"{_AS_OBJECT.get(self.desc, self.desc)} {self.schema} {self.name}"


def parse_toc(text: str) -> list[TocEntry]:
    entries: list[TocEntry] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(";"):
            continue
        match = _ENTRY.match(line)
        if match is None:
            raise BackupError(f"the backup's dump has an unreadable table of contents entry: {line[:200]!r}")
        rest = match.group(4)
        desc = next((d for d in _DESCS if rest.startswith(d + " ")), None)
        if desc is None:
            raise BackupError(f"the backup's dump holds an object of an unknown type: {rest[:200]!r}")
        schema, _, name_owner = rest[len(desc) + 1 :].partition(" ")
        name = name_owner.rsplit(" ", 1)[0] if " " in name_owner else name_owner
        entries.append(TocEntry(line, desc, schema, name))
    return entries


def toc(pg_restore: str, dump: Path) -> list[TocEntry]:
    result = subprocess.run([pg_restore, "--list", str(dump)], capture_output=True, text=True)
    if result.returncode != 0:
        raise BackupError(f"the backup's dump is not a readable pg_dump archive: {result.stderr.strip()[:500]}")
    return parse_toc(result.stdout)


def filter_toc(entries: list[TocEntry], reference: list[TocEntry]) -> list[TocEntry]:
    """The entries to restore; BackupError naming every entry that is not ragchat's."""
    known = {e.key for e in reference}
    tables = {e.name for e in reference if e.desc == "TABLE" and e.schema == "public"}
    keep: list[TocEntry] = []
    refused: list[TocEntry] = []
    for e in entries:
        if f"{e.desc} {e.schema} {e.name}" in _SKIPPED or e.desc in _SKIPPED_TYPES:
            continue
        ok = e.schema == "public" and (
            ((e.desc in _KEYED or e.desc in _AS_OBJECT) and e.key in known)
            or (e.desc in _ON_TABLE and e.name.split(" ", 1)[0] in tables)
            or e.desc == "INDEX"
        )
        (keep if ok else refused).append(e)
    if refused:
        names = "; ".join(f"{e.desc} {e.schema}.{e.name}" if e.schema != "-" else f"{e.desc} {e.name}" for e in refused)
        raise BackupError(f"the backup holds objects that are not ragchat's, nothing was restored: {names[:1500]}")
    return keep


# ---- the database as a set of definitions ------------------------------------------------------------------
# Read with search_path = pg_catalog (nothing the dump defined is ever looked up by name). Indexes are left out
# (an embedding space's index is named after the space; index expressions can call immutable functions only).
_DEFINITIONS = """
WITH ns AS (SELECT oid, nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema')
            AND nspname NOT LIKE 'pg\\_toast%' AND nspname NOT LIKE 'pg\\_temp%'),
     ext AS (SELECT classid, objid FROM pg_depend WHERE deptype = 'e'),
     rel AS (SELECT c.* FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
             WHERE c.relkind NOT IN ('i', 'I', 't') AND (c.oid NOT IN (SELECT objid FROM ext)))
SELECT 'schema ' || nspname FROM ns
UNION ALL SELECT 'extension ' || extname FROM pg_extension
UNION ALL SELECT 'language ' || lanname FROM pg_language
  WHERE lanname NOT IN ('internal', 'c', 'sql') AND oid NOT IN (SELECT objid FROM ext WHERE classid = 2612)
UNION ALL SELECT 'event trigger ' || evtname FROM pg_event_trigger
UNION ALL SELECT 'large objects' FROM pg_largeobject_metadata HAVING count(*) > 0
UNION ALL SELECT 'publication ' || pubname FROM pg_publication
UNION ALL SELECT 'foreign server ' || srvname FROM pg_foreign_server
UNION ALL SELECT 'cast ' || format_type(castsource, NULL) || ' ' || format_type(casttarget, NULL) FROM pg_cast
  WHERE oid >= 16384 AND oid NOT IN (SELECT objid FROM ext WHERE classid = 2605)
UNION ALL SELECT 'access method ' || amname FROM pg_am
  WHERE oid >= 16384 AND oid NOT IN (SELECT objid FROM ext WHERE classid = 2601)
UNION ALL SELECT 'object ' || i.type || ' ' || i.identity FROM pg_depend d,
  LATERAL pg_identify_object(d.classid, d.objid, d.objsubid) i
  WHERE d.refclassid = 2615 AND d.refobjid IN (SELECT oid FROM ns) AND d.deptype = 'n' AND i.type <> 'index'
    AND (d.classid, d.objid) NOT IN (SELECT classid, objid FROM ext)
UNION ALL SELECT 'function ' || CASE WHEN p.prokind = 'a' THEN p.oid::regprocedure::text
                                     ELSE pg_get_functiondef(p.oid) END
  FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace WHERE p.oid NOT IN (SELECT objid FROM ext WHERE classid = 1255)
UNION ALL SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text FROM pg_trigger t
  JOIN rel ON rel.oid = t.tgrelid WHERE NOT t.tgisinternal
UNION ALL SELECT format('relation %s %s rls=%s/%s am=%s', rel.oid::regclass, rel.relkind, rel.relrowsecurity,
                        rel.relforcerowsecurity, rel.relam) FROM rel
UNION ALL SELECT format('column %s.%s %s %s %s', rel.oid::regclass, a.attname, format_type(a.atttypid, a.atttypmod),
                        a.attgenerated, pg_get_expr(ad.adbin, ad.adrelid))
  FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef ad ON ad.adrelid = rel.oid AND ad.adnum = a.attnum
UNION ALL SELECT format('constraint %s %s %s', coalesce(c.conrelid::regclass::text, c.contypid::regtype::text),
                        c.conname, pg_get_constraintdef(c.oid))
  FROM pg_constraint c JOIN ns ON ns.oid = c.connamespace
UNION ALL SELECT format('view %s %s', rel.oid::regclass, pg_get_viewdef(rel.oid)) FROM rel
  WHERE rel.relkind IN ('v', 'm')
UNION ALL SELECT 'rule ' || pg_get_ruledef(r.oid) FROM pg_rewrite r JOIN rel ON rel.oid = r.ev_class
  WHERE r.rulename <> '_RETURN'
UNION ALL SELECT format('policy %s %s %s %s %s', p.polrelid::regclass, p.polname, p.polcmd,
                        pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
  FROM pg_policy p JOIN rel ON rel.oid = p.polrelid
"""


def connect_catalog(uri: str, dbname: str) -> psycopg.Connection[Any]:
    """A connection to `dbname` that resolves every name in pg_catalog first and only."""
    return psycopg.connect(make_conninfo(uri, dbname=dbname, options="-c search_path=pg_catalog"), autocommit=True)


def definitions(uri: str, dbname: str) -> set[str]:
    with connect_catalog(uri, dbname) as conn:
        return {str(r[0]) for r in conn.execute(_DEFINITIONS)}


def counts(uri: str, dbname: str) -> dict[str, int]:
    with connect_catalog(uri, dbname) as conn:
        names = [str(r[0]) for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        query = sql.SQL("SELECT count(*) FROM {}")
        return {n: int(conn.execute(query.format(sql.Identifier("public", n))).fetchone()[0]) for n in names}  # type: ignore[index]


def compare_definitions(restored: set[str], reference: set[str]) -> None:
    extra, missing = sorted(restored - reference), sorted(reference - restored)
    if extra or missing:
        said = [f"not ragchat's: {d[:300]}" for d in extra[:5]] + [f"missing: {d[:200]}" for d in missing[:3]]
        raise BackupError(
            f"the restored database differs from ragchat's schema ({len(extra)} unknown or changed definitions, "
            f"{len(missing)} missing); nothing was replaced: " + " | ".join(s.replace("\n", " ") for s in said)
        )


def compare_counts(restored: dict[str, int], manifest_rows: object) -> None:
    if not isinstance(manifest_rows, dict) or not manifest_rows:
        raise BackupError("the backup's manifest has no row counts to check the restored database against")
    declared = {str(k): v for k, v in manifest_rows.items()}  # type: ignore[union-attr]
    differ = [
        f"{t}: {declared.get(t, 'absent')} in the manifest, {restored.get(t, 'absent')} restored"
        for t in sorted(set(declared) | set(restored))
        if declared.get(t) != restored.get(t)
    ]
    if differ:
        raise BackupError(
            "the restored rows differ from the backup's manifest, nothing was replaced: " + "; ".join(differ[:10])
        )


# ---- databases and roles -------------------------------------------------------------------------------------
@dataclass
class Server:
    """The target's server, seen by the connecting (admin) user."""

    uri: str
    target: str
    superuser: bool

    @property
    def maintenance(self) -> str:
        return "template1" if self.target == "postgres" else "postgres"

    @contextmanager
    def admin(self) -> Iterator[psycopg.Connection[Any]]:
        with connect_catalog(self.uri, self.maintenance) as conn:
            yield conn

    def create_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def inspect_server(uri: str) -> Server:
    target = conninfo_to_dict(uri).get("dbname")
    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute(
            "SELECT current_database(), r.rolsuper, r.rolcreatedb, "
            "pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER') "
            "OR pg_has_role(current_user, 'pg_write_server_files', 'MEMBER') "
            "OR pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') "
            "FROM pg_roles r WHERE r.rolname = current_user"
        ).fetchone()
    assert row is not None
    name, superuser, createdb, server_files = str(target or row[0]), bool(row[1]), bool(row[2]), bool(row[3])
    if not superuser and not createdb:
        raise BackupError(
            "restore needs a database user that may create databases (CREATEDB): it restores into a new database, "
            "checks it, then swaps it in"
        )
    if not superuser and server_files:
        raise BackupError(
            "the database user may run programs or touch files on the server (pg_execute_server_program / "
            "pg_*_server_files): restore as a superuser (a restricted role is then used) or as a user without those"
        )
    return Server(uri, name, superuser)


def build_reference(server: Server, name: str, schema_version: str | None, workdir: Path) -> None:
    """A new database migrated by this code to `schema_version`: what a database of that version holds."""
    directory = workdir / "migrations"
    directory.mkdir()
    for path in migration_files(MIGRATIONS_DIR):
        if schema_version is not None and path.name[:4] <= schema_version:
            shutil.copy(path, directory / path.name)
    server.create_database(name)
    migrate(make_conninfo(server.uri, dbname=name), directory)


@dataclass
class Restorer:
    """Who `pg_restore` logs in as: a new role without rights (a superuser's restore), or the user itself."""

    conninfo: str
    password: str | None
    role: str | None


def prepare_scratch(server: Server, scratch: str) -> Restorer:
    """The new database, with `vector`, and a login for pg_restore that can create in its `public` only."""
    server.create_database(scratch)
    with connect_catalog(server.uri, scratch) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        if not server.superuser:
            return Restorer(make_conninfo(server.uri, dbname=scratch), None, None)
        role, password = f"ragchat_restore_{secrets.token_hex(6)}", secrets.token_urlsafe(24)
        conn.execute(
            sql.SQL(
                "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT "
                "PASSWORD {}"
            ).format(sql.Identifier(role), sql.Literal(password))
        )
        conn.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
    params = {k: v for k, v in conninfo_to_dict(server.uri).items() if k not in ("password", "passfile", "service")}
    return Restorer(make_conninfo(**{**params, "dbname": scratch, "user": role}), password, role)  # type: ignore[arg-type]


def hand_over(server: Server, scratch: str, restorer: Restorer) -> None:
    """The restore role's objects become the connecting user's; the role is dropped."""
    if restorer.role is None:
        return
    role = sql.Identifier(restorer.role)
    with connect_catalog(server.uri, scratch) as conn:
        conn.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(role))
        conn.execute(sql.SQL("DROP OWNED BY {}").format(role))
    drop_role(server, restorer.role)


def drop_role(server: Server, role: str) -> None:
    with server.admin() as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def swap_in(server: Server, scratch: str) -> None:
    """Rename the target away, the new database to the target's name, then drop the old one."""
    old = f"{server.target[:40]}_replaced_{secrets.token_hex(4)}"
    target = sql.Identifier(server.target)
    with server.admin() as conn:
        owner = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (server.target,)
        ).fetchone()
        try:
            with conn.transaction():
                conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(target, sql.Identifier(old)))
                conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(scratch), target))
        except psycopg.errors.ObjectInUse as exc:
            raise BackupError(
                f"the target database {server.target} is in use by other sessions (a running ragchat server or "
                "worker?): stop them and restore again; nothing was replaced"
            ) from exc
        if owner is not None and server.superuser:
            conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(target, sql.Identifier(str(owner[0]))))
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(old)))
