// The one rule on control characters in URLs, refs and paths, and the last
// line behind every surface: the backend picker and the ref listing refuse a
// URL holding one, whoever handed it over.
import { describe, expect, test } from "bun:test";
import { controlCharIn, controlCharProblem } from "../../src/core/base/naming.ts";
import { GrexError } from "../../src/core/base/errors.ts";
import { backendFor } from "../../src/core/git/backend.ts";
import { listRemoteRefs } from "../../src/core/git/ls-remote.ts";

describe("controlCharIn", () => {
  test("names each control character, and passes everything else", () => {
    expect(controlCharIn("https://host/repo.git")).toBeNull();
    expect(controlCharIn("git@host:org/répo.git ünïcode ✓")).toBeNull();
    expect(controlCharIn("a\nb")).toBe("a newline");
    expect(controlCharIn("a\rb")).toBe("a carriage return");
    expect(controlCharIn("a\tb")).toBe("a tab");
    expect(controlCharIn("a\0b")).toBe("a NUL byte");
    expect(controlCharIn("a\u001b[31m")).toBe("the control character U+001B");
    expect(controlCharIn("a\u007f")).toBe("the control character U+007F");
    expect(controlCharIn("a\u0085")).toBe("the control character U+0085");
    for (let c = 0; c < 0x20; c++) expect(controlCharIn(`x${String.fromCharCode(c)}`)).not.toBeNull();
    for (let c = 0x20; c < 0x7f; c++) expect(controlCharIn(`x${String.fromCharCode(c)}`)).toBeNull();
    expect(controlCharProblem("its url", "a\nb")).toBe("its url contains a newline, which git refuses in URLs, refs and paths");
  });
});

describe("the last line", () => {
  const url = "https://u\n[core]\nfsmonitor=touch pwned\n@127.0.0.1:1/x.git";
  const refused = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      return err;
    }
    return null;
  };
  test("backendFor refuses a URL with a control character (exit 4), before any transport is chosen", () => {
    const err = refused(() => backendFor(url));
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).exitCode).toBe(4);
    expect((err as GrexError).message).toBe(
      `Refusing the git URL ${JSON.stringify(url)}: it contains a newline, which git refuses in URLs, refs and paths; correct it where it was given.`,
    );
    expect(refused(() => backendFor("https://host/x.git"))).toBeNull();
  });
  test("listRemoteRefs (the dry run's ref listing) refuses it too", async () => {
    const err = await listRemoteRefs(url, new AbortController().signal).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as GrexError).exitCode).toBe(4);
  });
});
