import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { greet } from "../src/greet.js";

test("greets", () => {
  assert.equal(greet("world"), "hello, world");
});

test("writes a temp file", () => {
  const d = mkdtempSync(join(tmpdir(), "web-"));
  writeFileSync(join(d, "f.txt"), "x");
  assert.equal(readFileSync(join(d, "f.txt"), "utf8"), "x");
  rmSync(d, { recursive: true });
});
