// Placeholder contract; implemented by the locks/scheduler work.
export interface Scheduler {
  /** Maximum concurrent permits; 0 = unbounded. */
  readonly limit: number;
  /** Run `fn` while holding one permit; waiting for the permit is cancellable through `signal`. */
  withPermit<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T>;
}
