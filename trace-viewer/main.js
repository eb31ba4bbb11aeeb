// `acp trace`'s page: the token from the URL's fragment (#token=…, never sent to any server),
// kept for this tab only and taken out of the address bar, then the viewer over the API.
import { HttpSource } from "./http-source.js";
import { startViewer } from "./viewer.js";

const KEY = "acp-trace-token";
const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
if (fromHash) {
  sessionStorage.setItem(KEY, fromHash);
  history.replaceState(null, "", location.pathname);
}
const token = fromHash ?? sessionStorage.getItem(KEY) ?? "";
const root = document.getElementById("app");
if (!token) {
  root.textContent = "No token: open the URL acp trace printed (it ends with #token=…).";
} else {
  window.acpTrace = startViewer(root, new HttpSource(token));
}
