import { test } from "node:test";
import assert from "node:assert/strict";
import { explicitEnv } from "../../src/protocol/env";

const host = {
  PATH: "/usr/bin",
  HOME: "/home/u",
  LC_ALL: "C.UTF-8",
  AWS_SECRET_ACCESS_KEY: "s3cr3t",
  GITHUB_TOKEN: "ghp_x",
  ANTHROPIC_API_KEY: "sk-a",
};

test("by default only the allowlist passes: no secrets", () => {
  const env = explicitEnv(host);
  assert.deepEqual(env, { PATH: "/usr/bin", HOME: "/home/u", LC_ALL: "C.UTF-8" });
});

test("passthrough names and prefixes, then explicit values on top", () => {
  const env = explicitEnv(host, { passthrough: ["ANTHROPIC_API_KEY", "AWS_*"], inheritAll: false }, { PATH: "/opt/bin", MODE: "x" });
  assert.equal(env.ANTHROPIC_API_KEY, "sk-a");
  assert.equal(env.AWS_SECRET_ACCESS_KEY, "s3cr3t");
  assert.equal(env.GITHUB_TOKEN, undefined);
  assert.equal(env.PATH, "/opt/bin");
  assert.equal(env.MODE, "x");
});

test("inheritAll restores the whole environment", () => {
  const env = explicitEnv(host, { passthrough: [], inheritAll: true });
  assert.equal(env.GITHUB_TOKEN, "ghp_x");
});
