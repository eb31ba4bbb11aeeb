// Types of model.js for the VS Code extension's TypeScript (the JSON shapes are described in
// README.md; they are the server's).

export interface Filter {
  method?: string;
  session?: string;
  turn?: number;
  errors?: boolean;
  minMs?: number;
  q?: string;
  group?: boolean;
}

/** What the viewer asks; the answers are the JSON of `acp trace`'s API. */
export interface TraceSource {
  status(): Promise<unknown>;
  summary(): Promise<unknown>;
  rows(filter: Filter, from: number, count: number): Promise<unknown>;
  locate(filter: Filter, n: number): Promise<unknown>;
  turns(session: string): Promise<unknown>;
  message(n: number): Promise<unknown>;
}

export class TraceModel {
  constructor(options?: { maxLine?: number; maxRows?: number; file?: string });
  file: string;
  readonly rows: readonly unknown[];
  /** Text of the file, in any pieces. */
  addText(chunk: string): void;
  /** One complete line; `cutFrom`: the line's whole length in bytes when `line` is its start. */
  addLine(line: string, cutFrom?: number): void;
  /** Forgets what was fed (the viewer is told `why`). */
  reset(why?: string): void;
  status(): Record<string, unknown> & { rows: number; generation: number };
  summary(): Record<string, unknown>;
  page(filter: Filter, from: number, count: number): { total: number; from: number; items: Record<string, unknown>[]; generation: number };
  select(filter: Filter): [number, number][];
  locate(filter: Filter, n: number): { index: number | null };
  turnsOf(session: string, max?: number): { turns: Record<string, unknown>[] };
  message(n: number): {
    row: Record<string, unknown>;
    pair: Record<string, unknown> | null;
    json: boolean;
    text: string;
    truncated: boolean;
    lineBytes: number;
  };
}

export function modelSource(model: TraceModel): TraceSource;
export function utf8Length(s: string): number;
export function utf8Prefix(s: string, maxBytes: number): string;
