// A GatewayPort that loads the gateway module (and with it the workspace's
// pack.yaml files) only on the first tools/list or tools/call, so `grex serve`
// answers `initialize` without reading a pack or spawning a child.
import type { Gateway } from "./gateway.ts";
import type { GatewayCallHooks, GatewayOptions, GatewayPort } from "./types.ts";

export class LazyGateway implements GatewayPort {
  private loaded: Promise<Gateway> | undefined;
  private readonly pending = new Set<() => void>();
  private readonly unsubscribers = new Map<() => void, () => void>();

  constructor(private readonly opts: GatewayOptions) {}

  get(): Promise<Gateway> {
    this.loaded ??= import("./gateway.ts").then(({ Gateway: G }) => {
      const g = new G(this.opts);
      for (const l of this.pending) this.unsubscribers.set(l, g.subscribe(l));
      this.pending.clear();
      return g;
    });
    return this.loaded;
  }

  async listTools(readOnly: boolean): Promise<Record<string, unknown>[]> {
    return (await this.get()).listTools(readOnly);
  }

  async call(name: string, args: unknown, hooks: GatewayCallHooks): Promise<Record<string, unknown> | undefined> {
    return (await this.get()).call(name, args, hooks);
  }

  subscribe(onListChanged: () => void): () => void {
    if (this.loaded) void this.loaded.then((g) => this.unsubscribers.set(onListChanged, g.subscribe(onListChanged)));
    else this.pending.add(onListChanged);
    return () => {
      this.pending.delete(onListChanged);
      this.unsubscribers.get(onListChanged)?.();
      this.unsubscribers.delete(onListChanged);
    };
  }

  afterWrite(): void {
    void this.get().then((g) => g.afterWrite());
  }

  async close(): Promise<void> {
    if (this.loaded) await (await this.loaded).close();
  }
}
