// The LoRA adapters each worker of a mocker process serves (vLLM's serving models: --lora-modules at
// start, POST /v1/load_lora_adapter and /v1/unload_lora_adapter at run time), with vLLM's checks and
// words. Ids are vLLM's lora_int_id: one counter for the process from 1, never reused, one id per
// name (so every worker's BlockStored names an adapter alike). Changes are announced so the worker's
// discovery record lists what it holds.
import type { LoraModule } from "../../config/lora-modules.ts";

export interface LoadedAdapter {
  readonly name: string;
  readonly path: string;
  readonly id: number;
}

/** vLLM's answer to a load or unload: 200 with its text, or its error (status, type, message). */
export type AdapterAnswer = { ok: true; text: string } | { ok: false; status: 400 | 404; type: "InvalidUserInput" | "NotFoundError"; message: string };

export class LoraAdapters {
  private readonly byWorker: Map<string, LoadedAdapter>[];
  private readonly ids = new Map<string, number>();
  private nextId = 1;
  /** Per adapter name, requests submitted under it since start (all workers). */
  readonly requests = new Map<string, number>();

  constructor(
    workers: number,
    /** --lora-modules: their order gives the ids, whatever the placement, so every process names an adapter alike. */
    modules: readonly LoraModule[],
    /** A worker's adapters changed (its discovery record is updated). */
    private readonly changed: (worker: number) => void = () => {},
    /** The modules worker w loads at start (default: all of them). */
    placed: (worker: number) => readonly LoraModule[] = () => modules,
  ) {
    this.byWorker = Array.from({ length: workers }, () => new Map());
    for (const m of modules) this.idFor(m.name);
    for (let w = 0; w < workers; w++) for (const m of placed(w)) this.byWorker[w]!.set(m.name, { name: m.name, path: m.path, id: this.idFor(m.name) });
  }

  /** Whether any adapter was ever given (vLLM's LoRA metrics exist only with LoRA enabled). */
  get enabled(): boolean {
    return this.ids.size > 0;
  }

  /** The adapters `worker` holds, in load order. */
  of(worker: number): LoadedAdapter[] {
    return [...(this.byWorker[worker]?.values() ?? [])];
  }

  names(worker: number): string[] {
    return [...(this.byWorker[worker]?.keys() ?? [])];
  }

  has(worker: number, name: string): boolean {
    return this.byWorker[worker]?.has(name) ?? false;
  }

  /** The adapter `worker` holds under `name` (its path is the model card's root). */
  get(worker: number, name: string): LoadedAdapter | undefined {
    return this.byWorker[worker]?.get(name);
  }

  /** vLLM's lora_id of an adapter name (null for a name never loaded in this process). */
  idOf(name: string): number | null {
    return this.ids.get(name) ?? null;
  }

  /** `POST /v1/load_lora_adapter` {lora_name, lora_path} on `worker`. */
  load(worker: number, name: unknown, path: unknown, servedModel: string): AdapterAnswer {
    if (typeof name !== "string" || name === "" || typeof path !== "string" || path === "") return invalid("Both 'lora_name' and 'lora_path' must be provided.");
    const held = this.byWorker[worker]!;
    if (held.has(name)) return invalid(`The lora adapter '${name}' has already been loaded.`);
    if (name === servedModel) return invalid(`The lora adapter '${name}' has the served model's own name.`);
    held.set(name, { name, path, id: this.idFor(name) });
    this.changed(worker);
    return { ok: true, text: `Success: LoRA adapter '${name}' added successfully.` };
  }

  /** `POST /v1/unload_lora_adapter` {lora_name} on `worker`: requests already running under it finish. */
  unload(worker: number, name: unknown): AdapterAnswer {
    if (typeof name !== "string" || name === "") return invalid("'lora_name' needs to be provided to unload a LoRA adapter.");
    const held = this.byWorker[worker]!;
    if (!held.delete(name)) return { ok: false, status: 404, type: "NotFoundError", message: `The lora adapter '${name}' cannot be found.` };
    this.changed(worker);
    return { ok: true, text: `Success: LoRA adapter '${name}' removed successfully.` };
  }

  counted(name: string): void {
    this.requests.set(name, (this.requests.get(name) ?? 0) + 1);
  }

  private idFor(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) this.ids.set(name, (id = this.nextId++));
    return id;
  }
}

const invalid = (message: string): AdapterAnswer => ({ ok: false, status: 400, type: "InvalidUserInput", message });

/** vLLM's ErrorResponse body for an adapter answer's error: `{error: {message, type, param, code}}`, code = the status. */
export function adapterErrorResponse(a: AdapterAnswer & { ok: false }): Response {
  return Response.json({ error: { message: a.message, type: a.type, param: null, code: a.status } }, { status: a.status });
}
