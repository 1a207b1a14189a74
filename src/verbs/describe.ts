// Words for an agent: every tool parameter carries a description (syntax,
// units, an example, the default) that MCP's tools/list publishes, from the
// same valibot schema the CLI validates with. `values` publishes an enum in
// the JSON Schema without making validation stricter (an unknown value still
// reaches the verb, which answers with its own error and exit code).
import * as v from "valibot";

export function desc<S extends v.GenericSchema>(schema: S, text: string, values?: readonly string[]) {
  return values === undefined
    ? v.pipe(schema, v.description(text))
    : v.pipe(schema, v.metadata({ description: text, enum: [...values] }));
}
