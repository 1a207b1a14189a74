// Temp directories for tests: made under os.tmpdir(), removed by cleanup().
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh empty directory under the system temp dir. */
export function makeTmpDir(prefix = "grex-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Collects temp dirs so one afterEach/afterAll call removes them all. */
export class TmpDirs {
  private readonly dirs: string[] = [];

  make(prefix = "grex-test-"): string {
    const dir = makeTmpDir(prefix);
    this.dirs.push(dir);
    return dir;
  }

  cleanup(): void {
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}
