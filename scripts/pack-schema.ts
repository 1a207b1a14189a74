// `bun scripts/pack-schema.ts`: (re)write schema/pack.schema.json from the valibot schemas.
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { PACK_SCHEMA_PATH, packJsonSchemaText } from "../src/core/pack/json-schema.ts";

const out = resolve(import.meta.dir, "..", PACK_SCHEMA_PATH);
writeFileSync(out, packJsonSchemaText());
process.stdout.write(`wrote ${out}\n`);
