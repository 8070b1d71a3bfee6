// Prefix subscriptions with reference counts, as libzmq keeps them per SUB socket and per
// publisher peer: a message matches when its first frame starts with any subscribed prefix.
// Held in a radix trie (libzmq keeps a trie too), so subscribe, cancel and match cost the length
// of the prefix or topic, never the number of other subscriptions: a peer that subscribes to
// 100,000 prefixes cannot make each later message or cancel slower (docs/DECISIONS.md, "ZeroMQ").

interface TrieNode {
  /** Bytes on the edge from the parent (empty only at the root). */
  edge: Uint8Array;
  /** Subscriptions ending exactly here (at the root: the empty prefix, which matches everything). */
  refs: number;
  /** Children by the first byte of their edge. */
  children: Map<number, TrieNode> | undefined;
}

const newNode = (edge: Uint8Array, refs: number): TrieNode => ({ edge, refs, children: undefined });

/** Length of the common start of `edge` and `bytes[from..]`. */
function commonLength(edge: Uint8Array, bytes: Uint8Array, from: number): number {
  const n = Math.min(edge.length, bytes.length - from);
  let i = 0;
  while (i < n && edge[i] === bytes[from + i]) i++;
  return i;
}

export class SubscriptionSet {
  private root: TrieNode = newNode(new Uint8Array(0), 0);
  private distinct = 0;
  private distinctBytes = 0;

  /** Number of distinct prefixes (the empty prefix counts as one). */
  get size(): number {
    return this.distinct;
  }

  /** Sum of the distinct prefixes' lengths: what the set costs, for memory bounds. */
  get bytes(): number {
    return this.distinctBytes;
  }

  /** Adds one reference; true when the prefix is new. */
  add(prefix: Uint8Array): boolean {
    let node = this.root;
    let i = 0;
    for (;;) {
      if (i === prefix.length) return this.addRef(node, prefix.length);
      const first = prefix[i]!;
      const child = node.children?.get(first);
      if (child === undefined) {
        (node.children ??= new Map()).set(first, newNode(prefix.slice(i), 0));
        return this.addRef(node.children.get(first)!, prefix.length);
      }
      const common = commonLength(child.edge, prefix, i);
      if (common < child.edge.length) {
        // Split the edge: a new inner node holds the shared part, the old child hangs below it.
        const mid = newNode(child.edge.slice(0, common), 0);
        child.edge = child.edge.slice(common);
        mid.children = new Map([[child.edge[0]!, child]]);
        node.children!.set(first, mid);
        node = mid;
      } else {
        node = child;
      }
      i += common;
    }
  }

  /** Drops one reference; true when the prefix is gone (false if it was not subscribed). */
  remove(prefix: Uint8Array): boolean {
    const path = this.pathTo(prefix);
    const node = path?.at(-1);
    if (path === undefined || node === undefined || node.refs === 0) return false;
    if (--node.refs > 0) return false;
    this.distinct--;
    this.distinctBytes -= prefix.length;
    this.prune(path);
    return true;
  }

  clear(): void {
    this.root = newNode(new Uint8Array(0), 0);
    this.distinct = 0;
    this.distinctBytes = 0;
  }

  /** Distinct subscribed prefixes (the empty prefix included when subscribed), each a copy. */
  topics(): Uint8Array[] {
    const out: Uint8Array[] = [];
    const walk = (node: TrieNode, prefix: Uint8Array) => {
      if (node.refs > 0) out.push(prefix);
      if (node.children) for (const c of node.children.values()) walk(c, concat(prefix, c.edge));
    };
    walk(this.root, new Uint8Array(0));
    return out;
  }

  /** True when exactly this prefix is subscribed (not merely one of its prefixes). */
  has(prefix: Uint8Array): boolean {
    return (this.pathTo(prefix)?.at(-1)?.refs ?? 0) > 0;
  }

  /** The nodes from the root to the one `prefix` ends at; undefined when it ends inside an edge or off the trie. */
  private pathTo(prefix: Uint8Array): TrieNode[] | undefined {
    const path: TrieNode[] = [this.root];
    let node = this.root;
    let i = 0;
    while (i < prefix.length) {
      const child = node.children?.get(prefix[i]!);
      if (child === undefined || commonLength(child.edge, prefix, i) !== child.edge.length) return undefined;
      node = child;
      path.push(node);
      i += child.edge.length;
    }
    return path;
  }

  matches(topic: Uint8Array | undefined): boolean {
    let node = this.root;
    if (node.refs > 0) return true;
    if (topic === undefined) return false;
    let i = 0;
    while (i < topic.length) {
      const child = node.children?.get(topic[i]!);
      if (child === undefined) return false;
      const edge = child.edge;
      if (edge.length > topic.length - i) return false;
      for (let j = 1; j < edge.length; j++) if (edge[j] !== topic[i + j]) return false;
      if (child.refs > 0) return true;
      node = child;
      i += edge.length;
    }
    return false;
  }

  private addRef(node: TrieNode, length: number): boolean {
    if (node.refs++ > 0) return false;
    this.distinct++;
    this.distinctBytes += length;
    return true;
  }

  /** After the last node of `path` lost its last reference: unlink empty nodes, merge single-child chains. */
  private prune(path: TrieNode[]): void {
    for (let k = path.length - 1; k > 0; k--) {
      const node = path[k]!;
      const parent = path[k - 1]!;
      if (node.refs > 0) return;
      const kids = node.children?.size ?? 0;
      if (kids === 0) {
        parent.children!.delete(node.edge[0]!);
        if (parent.children!.size === 0) parent.children = undefined;
        continue; // the parent may now be an empty inner node itself
      }
      if (kids === 1) {
        const [only] = node.children!.values();
        node.edge = concat(node.edge, only!.edge);
        node.refs = only!.refs;
        node.children = only!.children;
      }
      return;
    }
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
