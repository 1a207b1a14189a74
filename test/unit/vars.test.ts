// Variable expansion in action arguments (SPEC §5).
import { describe, expect, test } from "bun:test";
import { homedir } from "node:os";
import { GrexError } from "../../src/core/base/errors.ts";
import { expandDeep, expandVars, homeOf } from "../../src/core/base/vars.ts";

const env = { FOO: "foo", BAR_2: "bar", EMPTY: "", HOME: "/home/test" };
const where = "actions[2].symlink.dst of pack 'x'";

function thrown(fn: () => unknown): GrexError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GrexError) return err;
    throw err;
  }
  throw new Error("expected a GrexError");
}

describe("expandVars", () => {
  test("$VAR and ${VAR}", () => {
    expect(expandVars("$FOO/x", env, where)).toBe("foo/x");
    expect(expandVars("${FOO}bar", env, where)).toBe("foobar");
    expect(expandVars("$BAR_2-$FOO", env, where)).toBe("bar-foo");
    expect(expandVars("a${EMPTY}b", env, where)).toBe("ab");
    expect(expandVars("no vars here", env, where)).toBe("no vars here");
  });

  test("$$ is a literal dollar, including before a name", () => {
    expect(expandVars("cost: $$5", env, where)).toBe("cost: $5");
    expect(expandVars("$$HOME", env, where)).toBe("$HOME");
    expect(expandVars("$$$FOO", env, where)).toBe("$foo");
    expect(expandVars("$${FOO}", env, where)).toBe("${FOO}");
  });

  test("a $ not starting a reference stays literal", () => {
    expect(expandVars("$5 and $", env, where)).toBe("$5 and $");
    expect(expandVars("a $ b", env, where)).toBe("a $ b");
  });

  test("an unset variable is a pack_op error naming it and where it is used", () => {
    const e = thrown(() => expandVars("$HOME/$NOPE/x", env, where));
    expect(e.kind).toBe("pack_op");
    expect(e.message).toBe(
      "Variable $NOPE used in actions[2].symlink.dst of pack 'x' is not set; export it or use $$ for a literal dollar.",
    );
    expect(e.data).toMatchObject({ variable: "NOPE" });
    expect(thrown(() => expandVars("${NOPE}", env, where)).message).toContain("$NOPE");
  });

  test("a malformed ${...} is an error, not silently literal", () => {
    expect(thrown(() => expandVars("${FOO", env, where)).message).toContain("malformed variable reference '${FOO'");
    expect(thrown(() => expandVars("${1X}", env, where)).kind).toBe("pack_op");
  });

  test("HOME is always defined: the environment's, else the account's", () => {
    expect(expandVars("$HOME/.x", env, where)).toBe("/home/test/.x");
    expect(expandVars("${HOME}", {}, where)).toBe(homedir());
    expect(homeOf({})).toBe(homedir());
  });
});

describe("expandDeep", () => {
  test("expands strings in nested arrays and objects, keeps other values and keys", () => {
    const input = { cmd: ["echo", "$FOO", { k: "${BAR_2}" }], n: 3, flag: true, nil: null, $FOO: "x" };
    expect(expandDeep(input, env, "actions[0].exec")).toEqual({
      cmd: ["echo", "foo", { k: "bar" }],
      n: 3,
      flag: true,
      nil: null,
      $FOO: "x",
    });
  });

  test("an error names the element's path and the suffix", () => {
    const e = thrown(() => expandDeep({ env: { A: "ok", B: "$MISSING" } }, env, "actions[3].exec", " of pack 'p'"));
    expect(e.message).toContain("used in actions[3].exec.env.B of pack 'p' is not set");
    const e2 = thrown(() => expandDeep(["a", "$MISSING"], env, "actions[1].exec.cmd"));
    expect(e2.message).toContain("actions[1].exec.cmd[1]");
  });
});
