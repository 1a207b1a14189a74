// How child tools are named behind `grex serve`: `<server>__<tool>` within
// [A-Za-z0-9_-], and `server:tool` accepted on input.
import { expect, test } from "bun:test";
import { exposedName, splitToolName } from "../../src/mcp/gateway/gateway.ts";

test("listed names join server and tool with __ and keep to [A-Za-z0-9_-]", () => {
  expect(exposedName("notes", "search")).toBe("notes__search");
  expect(exposedName("notes", "get-sum")).toBe("notes__get-sum");
  expect(exposedName("docs", "files.read/all")).toBe("docs__files_read_all");
});

test("input names: server__tool and server:tool; anything else names no server", () => {
  expect(splitToolName("notes__search")).toEqual({ server: "notes", tool: "search" });
  expect(splitToolName("notes:search")).toEqual({ server: "notes", tool: "search" });
  expect(splitToolName("notes__a__b")).toEqual({ server: "notes", tool: "a__b" });
  expect(splitToolName("notes:a:b")).toEqual({ server: "notes", tool: "a:b" });
  expect(splitToolName("notes__a:b")).toEqual({ server: "notes", tool: "a:b" });
  expect(splitToolName("notes:a__b")).toEqual({ server: "notes", tool: "a__b" });
  for (const name of ["ls", "notes__", "notes:", "__search", ":search"]) expect(splitToolName(name)).toBeUndefined();
});
