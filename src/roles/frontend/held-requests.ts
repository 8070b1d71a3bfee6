// Requests held while every worker of their model is saturated (the router's queue threshold):
// per model, oldest first, each waiting for a route outcome. A request whose client goes away
// while held leaves its queue with 499.
interface Held<T> {
  tokens: ArrayLike<number>;
  resolve(outcome: T): void;
}

export class HeldRequests<T> {
  private readonly byModel = new Map<string, Held<T>[]>();

  /** `clientGone` makes the outcome of a request whose client left while it was held. */
  constructor(private readonly clientGone: () => T) {}

  has(model: string): boolean {
    return this.byModel.has(model);
  }

  /** Requests held now, over every model. */
  get count(): number {
    let n = 0;
    for (const list of this.byModel.values()) n += list.length;
    return n;
  }

  /** Queues a request of `model`; resolves when release() routes it, or with clientGone() on abort. */
  hold(model: string, tokens: ArrayLike<number>, signal?: AbortSignal): Promise<T> {
    return new Promise((resolve) => {
      const h: Held<T> = { tokens, resolve };
      const list = this.byModel.get(model) ?? [];
      list.push(h);
      this.byModel.set(model, list);
      signal?.addEventListener("abort", () => {
        const at = list.indexOf(h);
        if (at === -1) return;
        list.splice(at, 1);
        if (list.length === 0 && this.byModel.get(model) === list) this.byModel.delete(model);
        resolve(this.clientGone());
      }, { once: true });
    });
  }

  /** Routes held requests of `model`, oldest first, while `hasRoom()` says its router takes more. */
  release(model: string, hasRoom: () => boolean, route: (tokens: ArrayLike<number>) => T): void {
    const list = this.byModel.get(model);
    if (list === undefined) return;
    while (list.length > 0 && hasRoom()) {
      const h = list.shift()!;
      h.resolve(route(h.tokens));
    }
    if (list.length === 0) this.byModel.delete(model);
  }
}
