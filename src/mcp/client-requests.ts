// Requests grex sends to its MCP client (elicitation/create for approvals),
// matched with the client's responses by id. Each is tied to the client
// request it serves, and given up when that request is cancelled.
import { CancelledError } from "../core/base/errors.ts";

type Id = string | number;
type Waiter = { resolve(r: Record<string, unknown>): void; reject(e: Error): void };

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export class ClientRequests {
  private readonly waiting = new Map<string, Waiter>();
  private next = 1;

  /** Send `method` through `send` (tied to request `related`) and resolve with the client's result. */
  request(
    send: (message: object, related: { requestId: Id }) => void,
    method: string,
    params: object,
    related: Id,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const id = `grex-${this.next++}`;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiting.delete(id);
        reject(new CancelledError());
      };
      const settle = () => signal.removeEventListener("abort", onAbort);
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.set(id, {
        resolve: (r) => {
          settle();
          resolve(r);
        },
        reject: (e) => {
          settle();
          reject(e);
        },
      });
      send({ jsonrpc: "2.0", id, method, params }, { requestId: related });
    });
  }

  /** A response from the client; ignored unless it answers one of ours. */
  answered(id: Id, msg: Record<string, unknown>): void {
    const waiter = this.waiting.get(String(id));
    if (!waiter) return;
    this.waiting.delete(String(id));
    if (isObject(msg.result)) waiter.resolve(msg.result);
    else waiter.reject(new Error(isObject(msg.error) && typeof msg.error.message === "string" ? msg.error.message : "the client answered with an error"));
  }
}
