// Requests held while every worker of their model is saturated (the router's queue threshold):
// per served model (a LoRA adapter's requests queue with its base model's), oldest first, each
// waiting for a route outcome. A request whose client goes away
// while held leaves its queue with 499.
interface Held<T> {
  /** The model the request named (an adapter, or the served model itself). */
  model: string;
  tokens: ArrayLike<number>;
  resolve(outcome: T): void;
}

/** Registers what to do once the request's client goes away (run at once if it has). */
export type WhenGone = (gone: () => void) => void;

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

  /** Queues a request naming `model` under its served model `key`; resolves when release() routes it, or with clientGone() on abort. */
  hold(key: string, model: string, tokens: ArrayLike<number>, whenGone?: WhenGone): Promise<T> {
    return new Promise((resolve) => {
      const h: Held<T> = { model, tokens, resolve };
      const list = this.byModel.get(key) ?? [];
      list.push(h);
      this.byModel.set(key, list);
      whenGone?.(() => {
        const at = list.indexOf(h);
        if (at === -1) return;
        list.splice(at, 1);
        if (list.length === 0 && this.byModel.get(key) === list) this.byModel.delete(key);
        resolve(this.clientGone());
      });
    });
  }

  /** Routes held requests of served model `key`, oldest first, while `hasRoom()` says its router takes more. */
  release(key: string, hasRoom: () => boolean, route: (model: string, tokens: ArrayLike<number>) => T): void {
    const list = this.byModel.get(key);
    if (list === undefined) return;
    while (list.length > 0 && hasRoom()) {
      const h = list.shift()!;
      h.resolve(route(h.model, h.tokens));
    }
    if (list.length === 0) this.byModel.delete(key);
  }
}
