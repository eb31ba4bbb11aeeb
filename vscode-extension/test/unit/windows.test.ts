// Starting agents and terminal commands on Windows, tested here with the platform stubbed:
// tests/client/windows.json replayed through the engine the extension loads (the rows
// acp-client/tests/cases.rs replays natively and under wine), then windowsSpawn.ts's plan over a
// stubbed file system (an npm shim and a batch file with hostile arguments), and the Windows
// environment rules (names ignore case; the allowlist has what Windows processes need).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { explicitEnv, matches } from "../../src/protocol/env";
import { planSpawn, SpawnRefused, windowsVar, type FileFacts } from "../../src/protocol/windowsSpawn";
import { extensionRoot, testPolicy, tryEngine } from "./engine-helpers";

const { engine, skip } = tryEngine();

interface Case {
  name: string;
  expect: unknown;
  find?: { command: string; path: string; pathext: string | null; files: string[] };
  plan?: { facts: Record<string, unknown>; args: string[] };
  contains?: { root: string; path: string };
}

test("windows.json: every row through the engine the extension loads", { skip }, () => {
  const file = path.resolve(extensionRoot, "..", "tests", "client", "windows.json");
  const cases = (JSON.parse(fs.readFileSync(file, "utf8")) as { cases: Case[] }).cases;
  assert.ok(cases.length >= 20);
  for (const c of cases) {
    let got: unknown;
    if (c.find) {
      const files = new Set(c.find.files.map((f) => f.toLowerCase()));
      got = engine!.windowsFindProgram(c.find.command, c.find.path, c.find.pathext ?? undefined, (x) => files.has(x.toLowerCase())) ?? null;
    } else if (c.plan) {
      got = JSON.parse(engine!.windowsPlanSpawn(JSON.stringify(c.plan.facts), JSON.stringify(c.plan.args)));
    } else {
      got = engine!.windowsContains(c.contains!.root, c.contains!.path);
    }
    assert.deepEqual(got, c.expect, c.name);
  }
});

/** npm's cmd-shim template (npm 7+) for `dist\index.js` of a package. */
const SHIM =
  "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\n" +
  'IF EXIST "%dp0%\\node.exe" (\r\n  SET "_prog=%dp0%\\node.exe"\r\n) ELSE (\r\n  SET "_prog=node"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\n' +
  'endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\\node_modules\\agent\\dist\\index.js" %*\r\n';

/** A Windows file system holding `files` (path -> text), names compared ignoring case. */
function stubFiles(files: Record<string, string>): FileFacts {
  const byLower = new Map(Object.entries(files).map(([k, v]) => [k.toLowerCase(), v]));
  return {
    isFile: (p) => byLower.has(p.toLowerCase()),
    readHead: (p, limit) => byLower.get(p.toLowerCase())?.slice(0, limit + 1),
  };
}

const HOSTILE = ["--prompt", "a b", 'say "hi"', "x&calc.exe", "a|b", "%USERPROFILE%", "^caret", "tail\\"];
const NPM = "C:\\Users\\u\\AppData\\Roaming\\npm";
const NODE = "C:\\Program Files\\nodejs\\node.exe";
const env = {
  Path: `C:\\Windows\\system32;${NPM};C:\\Program Files\\nodejs`,
  PATHEXT: ".COM;.EXE;.BAT;.CMD",
  ComSpec: "C:\\Windows\\system32\\cmd.exe",
};

test("an npm .cmd shim runs node on its script: no shell, exactly the arguments given", { skip }, () => {
  const files = stubFiles({ [`${NPM}\\agent.cmd`]: SHIM, [NODE]: "" });
  const plan = planSpawn(testPolicy().windowsRules(), "agent", HOSTILE, env, "win32", files);
  // node found through PATH + PATHEXT (`node.EXE`: Windows names ignore case).
  assert.deepEqual(
    { ...plan, command: plan.command.toLowerCase() },
    {
      command: NODE.toLowerCase(),
      args: [`${NPM}\\node_modules\\agent\\dist\\index.js`, ...HOSTILE],
      verbatim: false,
      via: "npm_shim",
    },
  );
});

test("a planted agent.cmd in the working directory is never what runs", { skip }, () => {
  const files = stubFiles({ ".\\agent.cmd": "@calc.exe\r\n", "agent.cmd": "@calc.exe\r\n", [`${NPM}\\agent.cmd`]: SHIM, [NODE]: "" });
  const plan = planSpawn(testPolicy().windowsRules(), "agent", [], { ...env, Path: `.;${env.Path}` }, "win32", files);
  assert.equal(plan.args[0], `${NPM}\\node_modules\\agent\\dist\\index.js`);
});

test("another batch file runs through cmd.exe with every argument quoted for it, verbatim", { skip }, () => {
  const files = stubFiles({ "C:\\tools\\agent.bat": "@node C:\\tools\\agent.js %*\r\n" });
  const plan = planSpawn(testPolicy().windowsRules(), "C:\\tools\\agent.bat", HOSTILE, env, "win32", files);
  assert.equal(plan.command, env.ComSpec);
  assert.equal(plan.verbatim, true);
  assert.equal(plan.via, "batch");
  assert.deepEqual(plan.args.slice(0, 4), ["/e:ON", "/v:OFF", "/d", "/c"]);
  assert.equal(
    plan.args[4],
    '""C:\\tools\\agent.bat" --prompt "a b" "say ""hi""" "x&calc.exe" "a|b" "%%cd:~,%USERPROFILE%%cd:~,%" "^caret" "tail\\\\""',
  );
});

test("refusals: found nowhere, a line break for cmd.exe, a PowerShell script", { skip }, () => {
  const rules = testPolicy().windowsRules();
  assert.throws(
    () => planSpawn(rules, "nope", [], env, "win32", stubFiles({})),
    (e: Error) => e instanceof SpawnRefused && /cannot find "nope" in PATH/.test(e.message),
  );
  const bat = stubFiles({ "C:\\t\\a.cmd": "@echo %*\r\n" });
  assert.throws(() => planSpawn(rules, "C:\\t\\a.cmd", ["x\r\ny"], env, "win32", bat), /line break/);
  const ps = stubFiles({ "C:\\t\\a.ps1": "" });
  assert.throws(() => planSpawn(rules, "C:\\t\\a.ps1", [], env, "win32", ps), /powershell -NoProfile -File/);
});

test("elsewhere than Windows a command runs as given", () => {
  assert.deepEqual(planSpawn(undefined, "npx", ["-y", "a&b"], {}, "linux"), {
    command: "npx",
    args: ["-y", "a&b"],
    verbatim: false,
    via: "as_given",
  });
});

test("Windows variable names ignore case; the allowlist has what Windows processes need", { skip }, () => {
  assert.equal(windowsVar({ Path: "C:\\x" }, "PATH"), "C:\\x");
  assert.ok(matches("Path", "PATH", true));
  assert.ok(!matches("Path", "PATH", false));
  const allow = testPolicy().envAllowlist("win32");
  for (const name of ["SystemRoot", "ComSpec", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "TEMP", "TMP", "windir"]) {
    assert.ok(allow.includes(name), name);
  }
  assert.ok(!testPolicy().envAllowlist("linux").includes("SystemRoot"));
  const host = { Path: "C:\\Windows", SystemRoot: "C:\\Windows", windir: "C:\\Windows", GITHUB_TOKEN: "x" };
  const out = explicitEnv(host, { allowlist: allow, passthrough: [], inheritAll: false }, { PATH: "C:\\mine" }, true);
  assert.deepEqual(out, { SystemRoot: "C:\\Windows", windir: "C:\\Windows", PATH: "C:\\mine" }, "one PATH, the given one; no secret");
});
