// The JSON Schema of `.grex/pack.yaml` for editors (yaml-language-server),
// generated from the same valibot schemas grex validates with: the document
// (./schema.ts) and each action's arguments (../actions). The parts valibot
// checks in code (one key per action item, `x-` extensions, conditions) are
// spelled out here from the same name lists. `bun scripts/pack-schema.ts`
// writes it to schema/pack.schema.json; a test keeps the two in step.
import { VERSION_SPEC_RE } from "../actions/version-spec.ts";
import { type JsonSchema, toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { actionDef, actionNames } from "../actions/index.ts";
import { COMBINERS, PREDICATES } from "../actions/conditions.ts";
import { BUILTIN_PACK_TYPES } from "../base/registry.ts";
import { BARE_PATH_RE, PackYamlSchema } from "./schema.ts";

export const PACK_SCHEMA_PATH = "schema/pack.schema.json";
export const PACK_SCHEMA_URL = "https://unpkg.com/grex-metarepo/schema/pack.schema.json";

const ACTION = { $ref: "#/definitions/action" };
const CONDITION = { $ref: "#/definitions/condition" };

function convert(schema: v.GenericSchema): JsonSchema {
  const { $schema: _, ...rest } = toJsonSchema(schema, { errorMode: "ignore" });
  return rest;
}

/** An object schema's property, which must be there (a generated schema that lost it is a bug). */
function prop(schema: JsonSchema, key: string): JsonSchema {
  const p = schema.properties?.[key];
  if (p === undefined || typeof p === "boolean") throw new Error(`pack.yaml JSON Schema: no property '${key}'`);
  return p;
}

/** `anyOf: [X, null]` (valibot's nullish) with X's items replaced. */
function nullableListOf(items: JsonSchema): JsonSchema {
  return { anyOf: [{ type: "array", items }, { type: "null" }] };
}

function actionSchema(name: string): JsonSchema {
  const def = actionDef(name);
  if (!def) throw new Error(`pack.yaml JSON Schema: no action '${name}'`);
  const args = convert(def.schema as v.GenericSchema);
  for (const c of COMBINERS) if (args.properties?.[c] !== undefined) args.properties[c] = { type: "array", items: CONDITION };
  for (const p of PREDICATES) if (args.properties?.[p] !== undefined) args.properties[p] = prop(conditionSchema(), p);
  if (name === "when") prop(args, "actions").items = ACTION;
  return { type: "object", properties: { [name]: args }, required: [name], additionalProperties: false };
}

function conditionSchema(): JsonSchema {
  const str = { type: "string", minLength: 1 } as const;
  const properties: Record<string, JsonSchema> = {
    path_exists: str,
    cmd_available: str,
    os: { type: "string", enum: ["linux", "macos", "windows"] },
    symlink_ok: { type: "object", properties: { src: str, dst: str }, required: ["src", "dst"], additionalProperties: false },
    reg_key: {
      type: "object",
      properties: { path: str, name: { type: ["string", "null"] } },
      required: ["path"],
      additionalProperties: false,
    },
    psversion: { anyOf: [{ type: "string", pattern: VERSION_SPEC_RE.source }, { type: "number", minimum: 0 }] },
  };
  for (const c of COMBINERS) properties[c] = { type: "array", items: CONDITION };
  return { type: "object", properties, minProperties: 1, maxProperties: 1, additionalProperties: false };
}

export function packJsonSchema(): JsonSchema {
  const doc = convert(PackYamlSchema as v.GenericSchema);
  prop(doc, "type").enum = [...BUILTIN_PACK_TYPES];
  const child = prop(doc, "children").anyOf?.[0];
  if (child && typeof child !== "boolean" && child.items && typeof child.items === "object" && !Array.isArray(child.items)) {
    prop(child.items as JsonSchema, "path").pattern = BARE_PATH_RE.source;
  }
  doc.properties = { ...doc.properties, actions: nullableListOf(ACTION), teardown: nullableListOf(ACTION) };
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    $id: PACK_SCHEMA_URL,
    title: "grex pack.yaml",
    description: "A grex pack's .grex/pack.yaml (schema_version \"1\"). Keys starting with x- are yours.",
    ...doc,
    patternProperties: { "^x-": {} },
    additionalProperties: false,
    definitions: {
      action: { oneOf: actionNames().map(actionSchema) },
      condition: conditionSchema(),
    },
  };
}

/** The committed file's text. */
export const packJsonSchemaText = (): string => `${JSON.stringify(packJsonSchema(), null, 2)}\n`;
