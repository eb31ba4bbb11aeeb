// A cancellation token with the same shape as vscode.CancellationToken, so bridge code can take
// either one without importing `vscode`.

export interface Disposable {
  dispose(): unknown;
}

export interface CancellationToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: (e: unknown) => unknown, thisArgs?: unknown, disposables?: Disposable[]): Disposable;
}

export class CancellationSource {
  private cancelled = false;
  private readonly listeners = new Set<(e: unknown) => unknown>();
  readonly token: CancellationToken;

  constructor() {
    const isCancelled = () => this.cancelled;
    const listeners = this.listeners;
    this.token = {
      get isCancellationRequested() {
        return isCancelled();
      },
      onCancellationRequested(listener, thisArgs, disposables) {
        const bound = thisArgs ? listener.bind(thisArgs) : listener;
        if (isCancelled()) {
          // Like VS Code: a listener added after cancellation fires at once.
          queueMicrotask(() => bound(undefined));
          return { dispose() {} };
        }
        listeners.add(bound);
        const d = { dispose: () => listeners.delete(bound) };
        disposables?.push(d);
        return d;
      },
    };
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const ls = [...this.listeners];
    this.listeners.clear();
    for (const l of ls) l(undefined);
  }
}

/** Resolves when the token is cancelled. */
export function whenCancelled(token: CancellationToken): Promise<void> {
  return new Promise((resolve) => {
    if (token.isCancellationRequested) resolve();
    else token.onCancellationRequested(() => resolve());
  });
}
