// Prism reads these from the global `Prism` when it loads (highlight.ts imports this first):
// manual, so it never scans the page and rewrites elements as HTML by itself; no worker message
// handler.
(globalThis as unknown as { Prism: { manual: boolean; disableWorkerMessageHandler: boolean } }).Prism = {
  manual: true,
  disableWorkerMessageHandler: true,
};

export {};
