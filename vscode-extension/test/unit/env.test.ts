import { test } from "node:test";
import assert from "node:assert/strict";
import { envPolicyFrom, explicitEnv, invalidEnvNames, NO_HOST_ENV } from "../../src/protocol/env";
import { testPolicy, tryEngine } from "./engine-helpers";

const { skip } = tryEngine();

const host = {
  PATH: "/usr/bin",
  HOME: "/home/u",
  LC_ALL: "C.UTF-8",
  AWS_SECRET_ACCESS_KEY: "s3cr3t",
  GITHUB_TOKEN: "ghp_x",
  ANTHROPIC_API_KEY: "sk-a",
};

test("by default only acp-client's allowlist passes: no secrets", { skip }, () => {
  const policy = envPolicyFrom(testPolicy(), [], false);
  assert.deepEqual(policy.allowlist, testPolicy().envAllowlist(), "the list comes from the wasm engine");
  const env = explicitEnv(host, policy);
  assert.deepEqual(env, { PATH: "/usr/bin", HOME: "/home/u", LC_ALL: "C.UTF-8" });
});

test("passthrough names and prefixes, then explicit values on top; invalid patterns are ignored", { skip }, () => {
  const policy = envPolicyFrom(testPolicy(), ["ANTHROPIC_API_KEY", "AWS_*", "*", "A=B", "", 7, "GITHUB TOKEN"], false);
  assert.deepEqual(policy.passthrough, ["ANTHROPIC_API_KEY", "AWS_*"]);
  assert.deepEqual(policy.ignored, ["*", "A=B", "", "GITHUB TOKEN"]);
  const env = explicitEnv(host, policy, { PATH: "/opt/bin", MODE: "x" });
  assert.equal(env.ANTHROPIC_API_KEY, "sk-a");
  assert.equal(env.AWS_SECRET_ACCESS_KEY, "s3cr3t");
  assert.equal(env.GITHUB_TOKEN, undefined);
  assert.equal(env.PATH, "/opt/bin");
  assert.equal(env.MODE, "x");
});

test("inheritAll restores the whole environment; no policy passes nothing", { skip }, () => {
  assert.equal(explicitEnv(host, envPolicyFrom(testPolicy(), [], true)).GITHUB_TOKEN, "ghp_x");
  assert.deepEqual(explicitEnv(host, NO_HOST_ENV, { A: "1" }), { A: "1" });
});

test("agent env names are checked with acp-client's rule", { skip }, () => {
  assert.deepEqual(invalidEnvNames(testPolicy(), { OK_1: "", "1BAD": "", "A=B": "", "A\nB": "", _x: "" }), ["1BAD", "A=B", "A\nB"]);
  assert.deepEqual(invalidEnvNames(testPolicy(), undefined), []);
});
