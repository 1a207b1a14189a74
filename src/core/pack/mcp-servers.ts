// pack.yaml `mcp.servers`: MCP servers a pack declares, which `grex serve`
// exposes behind its own tools. Only the declaration lives here (shape and
// validation); spawning and routing belong to src/mcp/gateway. Messages follow
// schema.ts's "<reason>; <what to do>" convention so the loader can prefix the
// file and field path.
import { closest } from "../base/closest.ts";
import * as v from "valibot";
import { describeValue as got } from "./describe.ts";

export const MCP_SERVER_ID_RE = /^[a-z][a-z0-9-]*$/;
export const MCP_TRANSPORTS = ["stdio", "streamable-http", "sse"] as const;
export type McpTransportName = (typeof MCP_TRANSPORTS)[number];

export interface McpServerDecl {
  id: string;
  transport: McpTransportName;
  /** argv (stdio), run in the pack directory; never a shell string. */
  command: string[] | null;
  /** Endpoint (streamable-http, or the event stream of a legacy sse server). */
  url: string | null;
  /** HTTP headers (streamable-http); values expand `$VAR` at connect time. */
  headers: Record<string, string>;
  /** Extra environment for a stdio child; values expand `$VAR` at spawn. */
  env: Record<string, string>;
  /** Allow-list of the server's tools; null = every tool it lists. */
  tools: string[] | null;
  /** Tools that need a person's approval: a list, or "all". */
  approval: string[] | "all";
}

const isMapping = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);


type Issue = v.BaseIssue<unknown>;
const mustBe = (what: string, fix: string) => (issue: Issue) => `must be ${what} (got ${got(issue.input)}); ${fix}`;

const stringMap = (fix: string) =>
  v.record(v.string(), v.string(mustBe("a string", `quote the value; ${fix}`)), mustBe("a mapping of names to strings", fix));

const nameList = (fix: string) =>
  v.array(
    v.pipe(v.string(mustBe("a string", fix)), v.nonEmpty(`is empty; ${fix}`)),
    mustBe("a list of tool names", fix),
  );

const KEYS = ["id", "transport", "command", "url", "headers", "env", "tools", "approval"];

const keyPath = (input: Record<string, unknown>, key: string) =>
  [{ type: "object" as const, origin: "value" as const, input, key, value: input[key] }] as [v.ObjectPathItem];

const server = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, mustBe("a mapping", "write each server as '- id: name' with transport and command or url")),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const s = dataset.value;
    const unknown = Object.keys(s).find((k) => !KEYS.includes(k));
    if (unknown !== undefined) {
      addIssue({ path: keyPath(s, unknown), message: `is not a known field; remove it (allowed: ${KEYS.join(", ")})` });
      return;
    }
    if (s.id === undefined) addIssue({ path: keyPath(s, "id"), message: "is missing; add an id such as id: notes" });
    else if (typeof s.id !== "string" || !MCP_SERVER_ID_RE.test(s.id)) {
      addIssue({ path: keyPath(s, "id"), message: `${typeof s.id === "string" ? `'${s.id}'` : got(s.id)} is not a valid server id; use lowercase letters, digits and '-', starting with a letter (such as notes)` });
    } else if (s.transport === undefined) addIssue({ path: keyPath(s, "transport"), message: "is missing; add transport: stdio, streamable-http or sse" });
    else if (!MCP_TRANSPORTS.includes(s.transport as McpTransportName)) {
      const hint = typeof s.transport === "string" ? closest(s.transport, MCP_TRANSPORTS, 3) : undefined;
      addIssue({
        path: keyPath(s, "transport"),
        message: `${typeof s.transport === "string" ? `'${s.transport}'` : got(s.transport)} is not a known transport${hint ? ` (did you mean ${hint}?)` : ""}; use stdio, streamable-http or sse`,
      });
    } else if (s.transport === "stdio") {
      if (s.command === undefined) addIssue({ path: keyPath(s, "command"), message: "is missing; a stdio server needs command: [program, arg, ...]" });
      else if (typeof s.command === "string") {
        addIssue({ path: keyPath(s, "command"), message: `is a shell string but must be an argv list (no shell runs it); write it as [${s.command.trim().split(/\s+/).join(", ")}]` });
      } else if (!Array.isArray(s.command) || s.command.length === 0 || !s.command.every((a) => typeof a === "string" && a !== "")) {
        addIssue({ path: keyPath(s, "command"), message: `must be a non-empty list of non-empty strings (got ${got(s.command)}); write it as [program, arg, ...]` });
      } else if (s.url !== undefined || s.headers !== undefined) {
        const k = s.url !== undefined ? "url" : "headers";
        addIssue({ path: keyPath(s, k), message: `applies to streamable-http and sse servers only; remove it or set transport: streamable-http` });
      }
    } else {
      if (s.url === undefined) addIssue({ path: keyPath(s, "url"), message: `is missing; a ${String(s.transport)} server needs url: ${s.transport === "sse" ? "http://host:port/sse" : "http://host:port/mcp"}` });
      else if (typeof s.url !== "string" || !/^https?:\/\/[^\s]+$/.test(s.url)) {
        addIssue({ path: keyPath(s, "url"), message: `${got(s.url)} is not an http:// or https:// URL; write url: http://127.0.0.1:9000/mcp` });
      } else if (s.command !== undefined || s.env !== undefined) {
        const k = s.command !== undefined ? "command" : "env";
        addIssue({ path: keyPath(s, k), message: "applies to stdio servers only; remove it or set transport: stdio" });
      }
    }
  }),
  v.looseObject({
    headers: v.optional(stringMap("write headers: { Authorization: \"Bearer $TOKEN\" }")),
    env: v.optional(stringMap("write env: { NAME: value }")),
    tools: v.optional(nameList("list the tool names to expose, such as tools: [search]")),
    approval: v.optional(
      v.union([v.literal("all"), nameList("list tool names, or write approval: all")], mustBe("a list of tool names or all", "write approval: [tool] or approval: all")),
    ),
  }),
  v.transform((s): McpServerDecl => {
    const raw = s as Record<string, unknown>;
    return {
      id: raw.id as string,
      transport: raw.transport as McpTransportName,
      command: Array.isArray(raw.command) ? (raw.command as string[]) : null,
      url: typeof raw.url === "string" ? raw.url : null,
      headers: s.headers ?? {},
      env: s.env ?? {},
      tools: s.tools ?? null,
      approval: s.approval ?? [],
    };
  }),
);

/** The `mcp` top-level key of pack.yaml: `{ servers: [...] }`; ids unique within the pack. */
export const McpSectionSchema = v.pipe(
  v.strictObject(
    { servers: v.optional(v.nullable(v.array(server, mustBe("a list", "write each server as a '- id: ...' list item")))) },
    (issue) => {
      const last = issue.path?.at(-1);
      if (last && last.type === "object" && last.origin === "key") return `is not a known field; remove it (mcp takes servers)`;
      return mustBe("a mapping with servers", "write mcp: { servers: [...] }")(issue);
    },
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const seen = new Set<string>();
    const list = dataset.value.servers ?? [];
    list.forEach((s, i) => {
      if (seen.has(s.id)) {
        addIssue({
          path: [
            { type: "object", origin: "value", input: dataset.value, key: "servers", value: list },
            { type: "array", origin: "value", input: list, key: i, value: s },
            { type: "object", origin: "value", input: { ...s }, key: "id", value: s.id },
          ],
          message: `'${s.id}' is declared twice in this pack; give each server its own id`,
        });
      }
      seen.add(s.id);
    });
  }),
  v.transform((m): McpServerDecl[] => m.servers ?? []),
);
