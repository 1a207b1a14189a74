// Durable file writes: nothing grex writes is ever half-written.
import { closeSync, fsync, fsyncSync, mkdirSync, open, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Write `data` to `path` atomically: temp file in the same directory, fsync, rename, fsync the directory. */
export function atomicWriteFile(path: string, data: string | Uint8Array): void {
  atomicWriteFiles([[path, data]]);
}

/**
 * Write several files atomically, each as `atomicWriteFile` does, renamed
 * into place in the order given (so a reader that needs the first before the
 * second never sees the second alone), with one fsync per directory at the end.
 */
export function atomicWriteFiles(files: Array<[path: string, data: string | Uint8Array]>): void {
  const temps: Array<[tmp: string, path: string]> = [];
  let current = "";
  try {
    for (const [path, data] of files) {
      current = path;
      temps.push([writeDurableTemp(path, data), path]);
    }
    for (const [tmp, path] of temps) renameSync(tmp, (current = path));
  } catch (err) {
    for (const [tmp] of temps) rmSync(tmp, { force: true });
    throw withPath(err, current);
  }
  for (const dir of new Set(files.map(([path]) => dirname(path)))) fsyncDir(dir);
}

/** A write error names the file it was for (a failed write(2) names none), so its sentence can. */
function withPath(err: unknown, path: string): unknown {
  if (err !== null && typeof err === "object" && "code" in err && !("path" in err) && path !== "") Object.assign(err, { path });
  return err;
}

/**
 * `atomicWriteFiles` on the I/O thread pool: while one caller waits for its
 * fsyncs, others (the next packs of a sync) keep working.
 */
export async function atomicWriteFilesAsync(files: Array<[path: string, data: string | Uint8Array]>): Promise<void> {
  // Loaded here, not at the top: node:fs/promises (and node:events) cost every command a millisecond at startup.
  const fsp = await import("node:fs/promises");
  const temps: Array<[tmp: string, path: string]> = [];
  try {
    for (const [path, data] of files) {
      const dir = dirname(path);
      await fsp.mkdir(dir, { recursive: true });
      const tmp = tempNameFor(path);
      temps.push([tmp, path]);
      const fh = await fsp.open(tmp, "w");
      try {
        await fh.writeFile(data);
        await fh.sync();
      } finally {
        await fh.close();
      }
    }
    for (const [tmp, path] of temps) await fsp.rename(tmp, path);
  } catch (err) {
    await Promise.all(temps.map(([tmp]) => fsp.rm(tmp, { force: true })));
    throw err;
  }
  for (const dir of new Set(files.map(([path]) => dirname(path)))) {
    try {
      const fh = await fsp.open(dir, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    } catch {
      // as fsyncDir: some platforms cannot fsync a directory
    }
  }
}

function tempNameFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`);
}

/** `data` in a fsync'd temp file next to `path`; returns the temp file's path. */
function writeDurableTemp(path: string, data: string | Uint8Array): string {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = tempNameFor(path);
  const fd = openSync(tmp, "w");
  try {
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  return tmp;
}

/** Append one whole line with a single write(2), then fsync. */
export function appendDurable(path: string, line: string): void {
  const fd = openSync(path, "a");
  try {
    const bytes = Buffer.from(line, "utf8");
    const n = writeSync(fd, bytes, 0, bytes.length);
    if (n !== bytes.length) throw new Error(`short write to ${path} (${n} of ${bytes.length} bytes)`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic.
  }
}

/** fsync(2) of an open file on the I/O thread pool: this caller waits, the event loop (the other packs of a sync) does not. */
export function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/** `fsyncDir` on the I/O thread pool. */
export async function fsyncDirAsync(dir: string): Promise<void> {
  let fd: number;
  try {
    fd = await new Promise<number>((resolve, reject) => open(dir, "r", (err, got) => (err ? reject(err) : resolve(got))));
  } catch {
    return; // as fsyncDir: some platforms cannot open or fsync a directory; the rename is still atomic
  }
  try {
    await fsyncAsync(fd);
  } catch {
    // as above
  } finally {
    closeSync(fd);
  }
}
