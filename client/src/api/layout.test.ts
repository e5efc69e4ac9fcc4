// The client's API layout (issue 28): every call goes through a resource module of src/api, written with the
// typed calls of client.ts over the generated schema; no module hand-writes a server type the schema has.
// These checks read the source tree, so a file added later is held to them too.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { describe, expect, it } from "vitest";
import { SERVER_DEFAULTS } from "./client";

/** client/src: vitest runs from client/ (import.meta.url is not a file: URL under jsdom). */
const SRC = join(process.cwd(), "src");

interface Source {
  /** Relative to src/, with "/" separators. */
  path: string;
  text: string;
}

function sources(dir = SRC): Source[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    if (!/\.(ts|tsx)$/.test(entry.name)) return [];
    return [{ path: relative(SRC, full).split(sep).join("/"), text: readFileSync(full, "utf8") }];
  });
}

const isTest = (path: string) => /\.test\.(ts|tsx)$/.test(path) || path.startsWith("test/");
const GENERATED = "api/schema.d.ts";

/** The files of src/api that may call `fetch` themselves: `request`, and the answers `request` cannot read. */
const MAY_FETCH = new Set([
  "api/client.ts", // request: every JSON call
  "api/chat.ts", // Server-Sent Events (POST /api/chat, GET /api/threads/{id}/stream)
  "api/health.ts", // a 503 whose body is the health, not an error
]);
/** The files that may call the untyped `request` (the typed calls are written with it; an upload's FormData). */
const MAY_REQUEST = new Set(["api/client.ts", "api/uploads.ts"]);

const FETCH_CALL = /\bfetch\s*\(/;
const REQUEST_CALL = /\brequest\s*[<(]/;
const IMPORTS_REQUEST = /import\s*\{[^}]*\brequest\b[^}]*\}\s*from\s*["'][^"']*api\/client["']/;

/** Where `source` breaks the rules of who may call `fetch` and `request`. */
export function callViolations(source: Source): string[] {
  if (isTest(source.path) || source.path === GENERATED) return [];
  const out: string[] = [];
  source.text.split("\n").forEach((line, i) => {
    const at = `${source.path}:${i + 1}`;
    if (FETCH_CALL.test(line) && !MAY_FETCH.has(source.path)) out.push(`${at} calls fetch(): ${line.trim()}`);
    if (REQUEST_CALL.test(line) && !MAY_REQUEST.has(source.path)) out.push(`${at} calls request: ${line.trim()}`);
    if (IMPORTS_REQUEST.test(line)) out.push(`${at} imports request: ${line.trim()}`);
  });
  return out;
}

/** The names of `components.schemas` in the generated schema.d.ts. */
export function schemaNames(schema: string): Set<string> {
  const start = schema.indexOf("export interface components {");
  const end = schema.indexOf("\n    responses:", start);
  const block = schema.slice(start, end);
  return new Set([...block.matchAll(/^ {8}(\w+): \{/gm)].map((m) => m[1]));
}

/** A type the client may write itself with the name of a schema type: the router's browser location. */
const OWN_NAMES = new Set(["lib/router.tsx:Location"]);

/**
 * Types declared in `source` under the name of a schema type: a hand-written copy of a server payload. An alias
 * of that very schema type (`type X = Schemas["X"]` / `components["schemas"]["X"]`) is the one allowed form.
 */
export function duplicateTypes(source: Source, names: Set<string>): string[] {
  if (isTest(source.path) || source.path === GENERATED) return [];
  const out: string[] = [];
  for (const m of source.text.matchAll(/^\s*(?:export\s+)?(interface|type)\s+(\w+)\b([^;\n]*)/gm)) {
    const [, kind, name, rest] = m;
    if (!names.has(name) || OWN_NAMES.has(`${source.path}:${name}`)) continue;
    const alias = new RegExp(`^\\s*=\\s*(?:Schemas|components\\["schemas"\\])\\["${name}"\\]\\s*$`);
    if (kind === "type" && alias.test(rest)) continue;
    out.push(`${source.path}: ${kind} ${name}${rest}`);
  }
  return out;
}

/** Request-body fields of `schema` that are required yet carry a default (`@default`), by schema name. */
export function defaultedRequestFields(schema: string): Record<string, string[]> {
  const ops = schema.slice(schema.indexOf("export interface operations"));
  const bodies = new Set(
    [...ops.matchAll(/requestBody\??: \{\s*content: \{\s*"application\/json": components\["schemas"\]\["(\w+)"\]/g)].map(
      (m) => m[1],
    ),
  );
  const out: Record<string, string[]> = {};
  for (const name of [...bodies].sort()) {
    const def = new RegExp(`\\n {8}${name}: \\{([\\s\\S]*?)\\n {8}\\};`).exec(schema);
    if (!def) continue;
    const fields = [...def[1].matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*?)\*\/\s*\n\s*(\w+)(\??):/g)]
      .filter((f) => f[1].includes("@default") && !f[3])
      .map((f) => f[2])
      .sort();
    if (fields.length) out[name] = fields;
  }
  return out;
}

/** The import cycles among `files` (type-only imports too): each as its files, in order. */
export function importCycles(files: Source[]): string[][] {
  const byPath = new Map(files.map((f) => [f.path, f]));
  const resolve = (from: string, spec: string): string | null => {
    if (!spec.startsWith(".")) return null;
    const parts = from.split("/").slice(0, -1);
    for (const piece of spec.split("/")) {
      if (piece === "..") parts.pop();
      else if (piece !== ".") parts.push(piece);
    }
    const base = parts.join("/");
    return [`${base}.ts`, `${base}.tsx`, `${base}/index.ts`].find((p) => byPath.has(p)) ?? null;
  };
  const edges = new Map(
    files.map((f) => [
      f.path,
      [...f.text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)]
        .map((m) => resolve(f.path, m[1] ?? m[2]))
        .filter((p): p is string => p !== null),
    ]),
  );
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (path: string) => {
    state.set(path, "open");
    stack.push(path);
    for (const next of edges.get(path) ?? []) {
      if (state.get(next) === "open") cycles.push(stack.slice(stack.indexOf(next)));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(path, "done");
  };
  for (const f of files) if (!state.has(f.path)) visit(f.path);
  return cycles;
}

const all = sources();
const schema = all.find((s) => s.path === GENERATED)!.text;

describe("the API layout", () => {
  it("finds the source tree and the schema", () => {
    expect(all.length).toBeGreaterThan(50);
    expect(schemaNames(schema).size).toBeGreaterThan(50);
    expect(schemaNames(schema)).toContain("Document");
  });

  it("no file outside the resource modules calls fetch or request", () => {
    expect(all.flatMap(callViolations)).toEqual([]);
  });

  it("no module hand-writes a type the schema has", () => {
    const names = schemaNames(schema);
    expect(all.flatMap((s) => duplicateTypes(s, names))).toEqual([]);
  });

  it("SERVER_DEFAULTS lists every request field the server defaults (rerun after npm run gen:api)", () => {
    const listed = Object.fromEntries(Object.entries(SERVER_DEFAULTS).map(([k, v]) => [k, [...v].sort()]));
    expect(listed).toEqual(defaultedRequestFields(schema));
  });

  it("no module imports one that imports it back (App.tsx and NavBar.tsx neither)", () => {
    expect(importCycles(all.filter((s) => !isTest(s.path)))).toEqual([]);
  });

  it("catches a planted violation", () => {
    const names = schemaNames(schema);
    const component = (text: string): Source => ({ path: "chat/Planted.tsx", text });
    expect(callViolations(component('const r = await fetch("/api/threads");'))).toHaveLength(1);
    expect(callViolations(component("window.fetch (url)"))).toHaveLength(1);
    expect(callViolations(component('request<Thread>("/api/threads/x")'))).toHaveLength(1);
    expect(callViolations(component('import { errorMessage, request } from "../api/client";'))).toHaveLength(1);
    expect(callViolations(component('import { errorMessage } from "../api/client";\nprefetch();'))).toEqual([]);
    expect(callViolations({ path: "api/search.ts", text: 'return request<X>("/api/search")' })).toHaveLength(1);
    expect(callViolations({ path: "api/search.ts", text: "const r = await fetch(url);" })).toHaveLength(1);
    expect(callViolations({ path: "chat/x.test.tsx", text: "fetch(url)" })).toEqual([]);

    expect(duplicateTypes(component("export interface SuggestedQuestion {\n  text: string;\n}"), names)).toHaveLength(1);
    expect(duplicateTypes({ path: "api/x.ts", text: "type Document = { id: string };" }, names)).toHaveLength(1);
    expect(duplicateTypes({ path: "api/x.ts", text: 'export type Thread = Schemas["Message"];' }, names)).toHaveLength(1);
    expect(duplicateTypes({ path: "api/x.ts", text: 'export type Thread = Schemas["Thread"] & { x: 1 };' }, names)).toHaveLength(1);
    expect(duplicateTypes({ path: "api/x.ts", text: 'export type Thread = Schemas["Thread"];' }, names)).toEqual([]);
    expect(duplicateTypes({ path: "api/x.ts", text: 'type Thread = components["schemas"]["Thread"];' }, names)).toEqual([]);
    expect(duplicateTypes({ path: "api/x.ts", text: "type ThreadView = { id: string };" }, names)).toEqual([]);

    const file = (path: string, text: string): Source => ({ path, text });
    const cycle = [
      file("App.tsx", 'import { NavBar } from "./components/NavBar";'),
      file("components/NavBar.tsx", 'import type { Page } from "../App";\nimport { x } from "../lib/x";'),
      file("lib/x.ts", "export const x = 1;"),
    ];
    expect(importCycles(cycle)).toEqual([["App.tsx", "components/NavBar.tsx"]]);
    expect(importCycles(cycle.slice(1))).toEqual([]);
    expect(importCycles([file("a.ts", 'const B = lazy(() => import("./b"));'), file("b.ts", 'export { a } from "./a";')])).toHaveLength(1);
  });
});
